"""A corpus the project writes for its document tests and benchmark: 32 documents in seven formats
(PDF, DOCX, HTML, Markdown, text, CSV, Python) and 96 questions, each with the passage that answers it.

Every document is about one made-up place. Two of its paragraphs state facts; the rest is filler about
the same place, so its name alone does not find the answer. Facts follow eight patterns shared across
places, so the meaning alone does not either: a question names the place and asks the fact in other
words than the document's ("Who established…" for "…was founded by…"). A third fact in each names a
spare pump's inventory code, and its question gives only the code (as one asks about a part number).

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

FORMATS = ["pdf", "docx", "html", "md", "txt", "csv", "py", "pdf", "docx", "html", "md", "txt", "pdf", "docx",
           "html", "md", "csv", "py", "pdf", "docx", "html", "md", "txt", "pdf", "docx", "html", "md", "csv",
           "txt", "py", "pdf", "csv"]


@dataclass(frozen=True)
class Question:
    """A question, the file that answers it, the sentence that does, and its PDF page (None elsewhere)."""

    question: str
    file: str
    passage: str
    page: int | None


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
    """Write the 32 documents into `folder`; the 96 questions."""
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
    return questions


if __name__ == "__main__":
    qs = write_corpus(Path(sys.argv[1]))
    print(json.dumps([asdict(q) for q in qs], indent=1))
