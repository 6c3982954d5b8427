"""A chat that outgrows a small context on SmolLM2: the questions the compaction tests ask, in turn
(the first one states facts a summary should keep)."""

QUESTIONS = [
    "My name is Ada and I keep three goats called Pip, Bo and Moss. Describe a goat.",
    "What do goats eat in winter? Answer in detail.",
    "Write a short poem about a farm in the hills.",
    "List five jobs a farmer does in spring.",
    "How does cheese get made from goat milk?",
    "What tools does a small farm need?",
    "Describe the weather in the mountains in autumn.",
    "What is my name, and what are my goats called?",
]
