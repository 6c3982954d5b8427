"""A corpus the project writes for its document tests and benchmark: 38 documents in seven formats
(PDF, DOCX, HTML, Markdown, text, CSV, Python) and 132 questions, each with the passage that answers it.

Every document is about one made-up place. Two of its paragraphs state facts; the rest is filler about
the same place, so its name alone does not find the answer. Facts follow eight patterns shared across
places, so the meaning alone does not either: a question names the place and asks the fact in other
words than the document's ("Who established…" for "…was founded by…"). A third fact in each names a
spare pump's inventory code, and its question gives only the code (as one asks about a part number).
These 96 questions ("place") all name their place, a rare word only its document has, so words alone find
the document, and at 200-token passages (two or three a document) the answer among the first five.

Six more documents (TOPICS) each have a subject of their own, and 36 questions: 24 "paraphrase" ones share
no word with their sentence beyond the commonest (the test checks it), as people ask in their own words,
and 12 "exact" ones ask by a name, a code or a number in the sentence.

Run `python tests/documents/corpus.py FOLDER` to write it (the questions are printed as JSON);
`write_corpus(folder)` returns the questions.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.documents.pdf_writer import write_pdf  # noqa: E402

PLACES = [
    "Harlow Lighthouse", "Brackenfield Mill", "Quillon Observatory", "Dunmere Library", "Ostrava Ferry",
    "Pellham Greenhouse", "Varnwick Bridge", "Calder Springs Spa", "Moorgate Foundry", "Thistlewood Farm",
    "Ashcombe Museum", "Kestrel Dam", "Fenwick Bakery", "Yarrow Ironworks", "Lindqvist Clinic",
    "Oakhurst Tramway", "Saltmarsh Harbour", "Gilroy Vineyard", "Penrose Academy", "Wexley Brewery",
    "Corrin Weather Station", "Halden Quarry", "Ravensholm Archive", "Tamsin Orchard", "Belvoir Theatre",
    "Ulverston Canal", "Marchetti Workshop", "Nordby Radio Mast", "Elmbridge Sawmill", "Ferrand Zoo",
    "Glenary Distillery", "Kilbride Data Centre",
]
PEOPLE = ["Mara Quill", "Tobias Fenn", "Ines Okafor", "Rudolf Hask", "Saoirse Lyle", "Kenji Marlow", "Alma Petrov",
          "Dorian Vale", "Hedda Strand", "Caspian Reyes", "Lucia Brandt", "Emeric Dolan"]
CROPS = ["barley", "pear", "saffron", "hop", "rye", "cherry", "walnut", "plum"]
GATES = ["north", "willow", "harbour", "chapel", "east", "old mill", "clocktower", "river"]

# (the sentence a document states, the question asked in other words)
FACTS = [
    ("{name} was founded in {year} by {person}, who chose the site for its clean water.",
     "Who established {name}, and in which year?"),
    ("The yearly maintenance budget of {name} is {n} thousand crowns, paid by the county.",
     "How much money does {name} spend each year on upkeep?"),
    ("Visitors to {name} must leave their bicycles at the {gate} gate before entering.",
     "Where should people park their bikes when they come to {name}?"),
    ("In {year} the chief engineer of {name}, {person}, replaced every copper pipe with stainless steel.",
     "When were the metal tubes at {name} swapped out, and by whom?"),
    ("{name} shuts its doors from December to February, when the river freezes over.",
     "In which months is {name} closed for the cold season?"),
    ("The autumn festival at {name} celebrates the first {crop} harvest with music and a market.",
     "What does the yearly celebration held at {name} mark?"),
    ("Staff at {name} reset a forgotten password with a link that expires after {m} minutes.",
     "How long is an account recovery URL valid for employees of {name}?"),
    ("{name} runs its water pumps on {k} solar panels fitted to the south roof.",
     "How many photovoltaic modules power the pumps of {name}?"),
]

# A question that names a thing only by its code, as people ask about a part number or an error code: the
# words find it, a model of meaning often does not.
CODE_FACT = ("The spare pump kept at {name} is listed in the county inventory under code {code}.",
             "Where is the spare pump with inventory code {code} kept?")

FILLER = [
    "{name} appears in several regional guidebooks, which praise its staff and its quiet setting.",
    "A small shop near the entrance of {name} sells postcards, maps and local honey.",
    "School groups visit {name} in spring; teachers book a guided tour a month ahead.",
    "The records of {name} are kept in ledgers, and volunteers copy them into a database.",
    "Photographs of {name} from the last century hang in the corridor by the office.",
    "Local newspapers report on {name} several times a year, usually about its events.",
    "The road to {name} is narrow, and buses stop at the village square nearby.",
    "A committee of residents meets at {name} every month to discuss repairs and plans.",
    "The staff of {name} wear green uniforms, and new employees train for two weeks.",
    "Money raised by the friends of {name} pays for new benches and a bigger car park.",
    "In summer {name} stays open late, and visitors bring picnics to the lawn.",
    "The founders of {name} are remembered by a plaque beside the main door.",
    "Engineers inspect the roof and the pipes of {name} after every storm.",
    "The harvest and the river shape the calendar of {name} and of the village.",
    "Passwords and keys for the offices of {name} are kept by the caretaker.",
    "Electricity for {name} once came from a coal boiler that was removed long ago.",
]

# Documents unlike the places above, each about its own subject, with questions as people ask them: most in
# their own words ("paraphrase": no word of the answering sentence beyond the commonest, so only meaning
# finds it), some by a name, a code or a number the sentence holds ("exact": what words find and a model of
# meaning often does not). (file name, title, paragraphs, [(paragraph index, question, group)])
TOPICS: list[tuple[str, str, list[str], list[tuple[int, str, str]]]] = [
    ("aqualine_dishwasher.md", "Aqualine DW-560 dishwasher: user guide", [
        "The Aqualine DW-560 holds twelve place settings and fits under a standard kitchen counter.",
        "Rinse the coarse filter under a running tap once every two weeks.",
        "Load plates facing the centre and put cups upside down on the top rack.",
        "If glasses come out cloudy, raise the water softener setting by one step.",
        "Detergent tablets go in the small compartment on the inside of the door.",
        "Never put cast iron pans or wooden chopping boards in the appliance.",
        "The eco programme takes three hours but uses only nine litres.",
        "A quiet night mode lowers the noise to 39 decibels by running the motor slowly.",
        "Error E24 means the drain hose is kinked or the pump is blocked.",
        "The replacement spray arm is sold under part number 4487-221-09.",
        "Wipe the door seal with a damp cloth now and then to stop mould from forming.",
        "The warranty lasts two years from the date on the receipt.",
    ], [(1, "How often should I clean the sieve at the bottom of my dish machine?", "paraphrase"),
        (3, "My tumblers look milky after a wash cycle; what do I adjust?", "paraphrase"),
        (5, "Is it safe to clean a skillet or a butcher block in the dish machine?", "paraphrase"),
        (6, "Which cycle saves the most energy, and how long does it run?", "paraphrase"),
        (8, "What does E24 mean?", "exact"),
        (9, "Which component is 4487-221-09?", "exact")]),
    ("norrvik_handbook.txt", "Norrvik Logistics staff handbook", [
        "Welcome to Norrvik Logistics. This handbook explains how we work together.",
        "Employees accrue twenty-five days of paid leave per calendar year.",
        "Travel expenses must be submitted within thirty days with the original receipts attached.",
        "Our offices open at seven and close at six; the warehouse runs around the clock.",
        "New hires complete a six-month probation period before their contract becomes permanent.",
        "Remote work is allowed up to two days a week with a manager's approval.",
        "Expense claims are booked to cost centre NL-7731 unless a project code is given.",
        "The IT helpdesk answers on extension 4410 from eight until five.",
        "Safety shoes and a high-visibility vest are required on the loading dock.",
        "Performance reviews take place every March and September.",
        "The canteen serves a hot lunch, and a vegetarian dish is always on the menu.",
    ], [(1, "How much holiday time do workers get annually?", "paraphrase"),
        (2, "What is the deadline for getting reimbursed for a business trip?", "paraphrase"),
        (4, "How long is the trial phase for someone who just joined?", "paraphrase"),
        (5, "May I do my job from my house, and how frequently?", "paraphrase"),
        (6, "What is NL-7731?", "exact"),
        (7, "Who answers on extension 4410?", "exact")]),
    ("rye_sourdough.html", "Rye sourdough loaf", [
        "This dark loaf keeps well for a week and tastes best sliced thin with butter.",
        "Feed the starter with equal weights of flour and water twelve hours before baking.",
        "Mix the dough by hand; rye has little gluten, so kneading does not help.",
        "Let the dough rise in the fridge overnight for a more sour taste.",
        "Bake at 240 degrees with steam for the first fifteen minutes, then lower the heat.",
        "The crumb is done when the centre reaches 96 degrees on a probe thermometer.",
        "Wait a full day before cutting, or the crumb will be sticky.",
        "This recipe was adapted from the 1962 edition of Hansen's bakery notebook.",
        "Use flour of type 1150 for the rye portion and a little wheat for lift.",
        "Caraway and coriander seeds may be added to the dough if you like them.",
        "Leftover slices make good croutons when toasted with oil and salt.",
    ], [(1, "When and how do I nourish the leaven ahead of making bread?", "paraphrase"),
        (3, "How can I get a tangier flavour?", "paraphrase"),
        (4, "How hot should the oven be at the start?", "paraphrase"),
        (5, "How do I know the interior is cooked through?", "paraphrase"),
        (7, "What was taken from Hansen's notebook?", "exact"),
        (8, "Where is type 1150 used?", "exact")]),
    ("lumenet_router.md", "Lumenet AX3 router setup", [
        "The Lumenet AX3 router connects your home to the internet over a fibre or cable line.",
        "To restore factory settings, hold the recessed button on the back for ten seconds with a paperclip.",
        "The guest network isolates visitors' devices from your computers and printers.",
        "Firmware updates install automatically at 3 a.m. unless you switch them off.",
        "If the light blinks orange, the cable from the wall socket is not delivering a signal.",
        "Place the router high up and away from microwaves for the best coverage.",
        "The default admin address is 192.168.8.1, and the password is printed on the label.",
        "Port 8443 serves the remote management page when remote access is enabled.",
        "Parental controls can pause the connection of chosen devices at bedtime.",
        "Two aerials on the top can be turned to reach rooms on another floor.",
        "The power adapter supplies twelve volts; use only the one in the box.",
    ], [(1, "How do I return the device to how it came out of the box?", "paraphrase"),
        (2, "Can my houseguests see my laptop on the wifi?", "paraphrase"),
        (3, "Does this box upgrade its own software, and when?", "paraphrase"),
        (4, "What does an amber flashing lamp mean?", "paraphrase"),
        (6, "What is at 192.168.8.1?", "exact"),
        (7, "What runs on 8443?", "exact")]),
    ("balcony_tomatoes.txt", "Growing tomatoes on a balcony", [
        "Tomatoes grow well in pots on a sunny balcony if they get six hours of sun.",
        "Pinch out the side shoots that grow between the main stem and the leaves.",
        "Water deeply twice a week rather than a little every day, so the roots grow down.",
        "Yellowing lower leaves usually mean the plant needs more nitrogen.",
        "Blossom end rot comes from uneven watering, not from a disease.",
        "Tie the stem loosely to a cane as it grows, using soft string.",
        "The variety Sungold F1 ripens in about 57 days from planting out.",
        "Feed with Tomorite every ten days once the first flowers appear.",
        "Pick the fruit when it is fully coloured and slightly soft.",
        "Bring green fruit indoors before the first frost and let it ripen on a windowsill.",
        "A pot of at least twenty litres gives the roots enough room.",
    ], [(1, "Which little sprouts should I remove from my plants?", "paraphrase"),
        (2, "Is it better to soak the pots rarely or sprinkle them often?", "paraphrase"),
        (3, "Why is the bottom foliage turning pale, and what does it lack?", "paraphrase"),
        (4, "What causes black patches at the base of the fruit?", "paraphrase"),
        (6, "How fast is Sungold F1?", "exact"),
        (7, "How often is Tomorite given?", "exact")]),
    ("bluecrest_insurance.html", "Bluecrest travel insurance policy", [
        "This policy covers you for medical costs, cancellation and lost belongings while abroad.",
        "We do not pay for losses if you leave your luggage unattended in a public place.",
        "Cancellation is covered when a close relative falls seriously ill before departure.",
        "Winter sports such as skiing and snowboarding need the optional extra cover.",
        "Claims must be made within 31 days of returning home.",
        "Pre-existing medical conditions must be declared when you buy the policy.",
        "The policy wording has the reference BTI/2024/07.",
        "The emergency assistance line, +44 20 7946 0321, is open day and night.",
        "Delays of more than twelve hours are compensated at a fixed rate.",
        "Children under eighteen travelling with you are covered at no extra charge.",
        "Rental cars are not covered; buy the hire company's own protection.",
    ], [(1, "Am I protected if my suitcase is stolen after I walk away from it?", "paraphrase"),
        (2, "Will I get a refund for calling off the trip because my mother is in hospital?", "paraphrase"),
        (3, "Is going down the slopes included in the basic plan?", "paraphrase"),
        (4, "How soon after I get back should I ask for compensation?", "paraphrase"),
        (6, "What is BTI/2024/07?", "exact"),
        (7, "Who answers +44 20 7946 0321?", "exact")]),
]

FORMATS = ["pdf", "docx", "html", "md", "txt", "csv", "py", "pdf", "docx", "html", "md", "txt", "pdf", "docx",
           "html", "md", "csv", "py", "pdf", "docx", "html", "md", "txt", "pdf", "docx", "html", "md", "csv",
           "txt", "py", "pdf", "csv"]


@dataclass(frozen=True)
class Question:
    """A question, the file that answers it, the sentence that does, its PDF page (None elsewhere), and its
    group: "place" (a place's fact asked in other words, naming the place; or its pump's code), "paraphrase"
    or "exact" (TOPICS)."""

    question: str
    file: str
    passage: str
    page: int | None
    group: str = "place"


def _values(i: int) -> dict[str, str]:
    return {"name": PLACES[i], "year": str(1790 + (i * 37) % 200), "person": PEOPLE[i % len(PEOPLE)],
            "n": str(40 + i * 13), "gate": GATES[i % len(GATES)], "crop": CROPS[(i * 3) % len(CROPS)],
            "m": str(10 + (i * 7) % 50), "k": str(12 + i * 5)}


def _slug(name: str) -> str:
    return name.lower().replace(" ", "_")


def document(i: int) -> tuple[str, list[str], list[tuple[str, str]]]:
    """Place i's title, paragraphs (filler and facts mixed) and its three (fact, question) pairs."""
    v = _values(i)
    facts = [(FACTS[(2 * i) % 8][0].format(**v), FACTS[(2 * i) % 8][1].format(**v)),
             (FACTS[(2 * i + 3) % 8][0].format(**v), FACTS[(2 * i + 3) % 8][1].format(**v))]
    code = "".join(w[0] for w in PLACES[i].split()).upper() + f"-{4000 + i * 97}"
    facts.append((CODE_FACT[0].format(code=code, **v), CODE_FACT[1].format(code=code)))
    fill = [FILLER[(i + j) % len(FILLER)].format(**v) for j in range(14)]
    paras = [*fill[:3], facts[0][0], *fill[3:6], facts[2][0], *fill[6:9], facts[1][0], *fill[9:]]
    return PLACES[i], paras, facts


def write_corpus(folder: Path) -> list[Question]:
    """Write the 38 documents into `folder`; the 132 questions."""
    import docx

    folder.mkdir(parents=True, exist_ok=True)
    questions: list[Question] = []
    for i, fmt in enumerate(FORMATS):
        title, paras, facts = document(i)
        path = folder / f"{_slug(title)}.{fmt}"
        pages: dict[str, int | None] = {f: None for f, _ in facts}
        if fmt == "pdf":
            # four paragraphs a page (the title on the first)
            write_pdf(path, [[title, *paras[:3]], *(paras[k:k + 4] for k in range(3, len(paras), 4))])
            for f, _ in facts:
                idx = paras.index(f)
                pages[f] = 1 if idx < 3 else 2 + (idx - 3) // 4
        elif fmt == "docx":
            d = docx.Document()
            d.add_heading(title, level=1)
            d.add_heading("History and visitors", level=2)
            for p in paras[:8]:
                d.add_paragraph(p)
            d.add_heading("Running the place", level=2)
            for p in paras[8:]:
                d.add_paragraph(p)
            t = d.add_table(rows=2, cols=2)
            t.cell(0, 0).text, t.cell(0, 1).text = "Opened to the public", "yes"
            t.cell(1, 0).text, t.cell(1, 1).text = "Guided tours", "on request"
            d.save(str(path))
        elif fmt == "html":
            body = ("".join(f"<p>{p}</p>" for p in paras[:8]) + "<h2>Today</h2>"
                    + "".join(f"<p>{p}</p>" for p in paras[8:]))
            path.write_text(f"<!doctype html><html><head><title>{title}</title><style>p {{ color: red }}</style>"
                            f"<script>var tracking = 'do not index me';</script></head><body><h1>{title}</h1>"
                            f"{body}</body></html>", "utf-8")
        elif fmt == "md":
            path.write_text(f"# {title}\n\n## History\n\n" + "\n\n".join(paras[:8]) + "\n\n## Today\n\n"
                            + "\n\n".join(paras[8:]) + "\n\n```\nopening_hours = '9-17'\n```\n", "utf-8")
        elif fmt == "txt":
            path.write_text(title + "\n\n" + "\n\n".join(paras) + "\n", "utf-8")
        elif fmt == "csv":
            rows = ["site,topic,detail"] + [f'"{title}",note {j + 1},"{p}"' for j, p in enumerate(paras)]
            path.write_text("\n".join(rows) + "\n", "utf-8")
        else:
            code = [f'"""Tools for {title}."""', ""]
            for j, p in enumerate(paras):
                code += [f"def step_{j}():", f'    """{p}"""', f"    return {j}", "", ""]
            path.write_text("\n".join(code), "utf-8")
        for f, q in facts:
            questions.append(Question(q, path.name, f, pages[f]))
    for name, title, paras, asked in TOPICS:
        path = folder / name
        if name.endswith(".html"):
            path.write_text(f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
                            + "".join(f"<p>{p}</p>" for p in paras) + "</body></html>", "utf-8")
        elif name.endswith(".md"):
            path.write_text(f"# {title}\n\n" + "\n\n".join(paras) + "\n", "utf-8")
        else:
            path.write_text(title + "\n\n" + "\n\n".join(paras) + "\n", "utf-8")
        questions += [Question(q, name, paras[i], None, group) for i, q, group in asked]
    return questions


if __name__ == "__main__":
    qs = write_corpus(Path(sys.argv[1]))
    print(json.dumps([asdict(q) for q in qs], indent=1))
