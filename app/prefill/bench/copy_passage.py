"""The copy task of the speculation benchmarks: a ~400-token passage the answer repeats word for word
(SmolLM2 answers it in ~375 tokens, greedy), so that drafts from the text itself should be taken.
The chat engine's (`benchmarks/speculative_bench.py`) and the server's (`serve_speculative_bench.py
--tasks passage`) figures are measured on the same prompt."""

PASSAGE = """\
The lighthouse on Gull Point had been dark for eleven years when Mara Quinn bought it at auction for \
the price of a used car. The roof leaked, the iron stairs had rusted through in three places, and the \
great lens, once the pride of the coast, lay in pieces on the lamp room floor. Her friends told her she \
had lost her mind. Her brother offered to drive her to the city and find her a sensible apartment with \
working heat. Mara thanked them all and moved in the following week with a camp stove, two crates of \
books and a stubborn orange cat named Admiral.

The first winter was the hardest. Storms came in off the sea every few days, and the wind found every \
gap in the old stone walls. Mara learned to patch mortar, to splice rope, and to read the sky the way \
the old keepers had, watching the colour of the clouds and the height of the swell. She kept a logbook \
in the keepers' tradition, noting the weather, the ships that passed, and the birds that sheltered on \
the rocks below. Admiral caught mice in the cellar and slept on the warm flue of the stove.

In spring a retired engineer named Tobias Ferrer walked up the headland to see who had been lighting \
lanterns in the tower. He had worked on the lens forty years before and knew every prism by its \
number. Together they sorted the broken glass into trays, cleaned each piece with vinegar and soft \
cloth, and ordered the missing parts from a foundry that still cast brass fittings the old way. It \
took them two summers to rebuild the lamp. On the night they lit it, the whole village came out to \
the harbour wall to watch the beam sweep across the water, and the fishing boats answered with their \
horns, one after another, all the way down the coast.
"""
COPY = "Copy the following text exactly, word for word, and write nothing else:\n\n" + PASSAGE
