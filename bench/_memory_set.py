"""The labelled set of ``python -m bench memory``: long conversations and questions about them.

Generated, deterministic, and shipped as ``bench/memory_set.json.gz`` (``python -m
bench._memory_set`` writes it again). What makes it hard is what makes real team memory hard:

* **many entities with many observations each**: conversations (``chat 0`` ...) of
  ~40 turns between members of a small cast, so speakers' names occur in every entity;
* **common words shared by every entity**: most turns are small talk drawn from one pool;
* **answers deep inside long entities**: each conversation holds a few facts at random
  turns, past what a small embedding model reads of one long text;
* **paraphrases**: every fact is asked about twice, once with its own words (``Where did
  Maria go hiking with Tomas?``) and once without them (``Which region did Maria trek
  through with a relative?``).

Each question is labelled with the conversation holding its answer.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

__all__ = ["PATH", "generate", "load"]

PATH = Path(__file__).with_name("memory_set.json.gz")

_CAST = ["Maria", "Tomas", "Aiko", "Jonas", "Priya", "Omar"]
_SMALL_TALK = [
    "Hi, how are you doing today?",
    "I'm good, thanks for asking. Busy week though.",
    "Did you see the game last night? What a finish.",
    "Honestly I have been so tired lately, work is a lot.",
    "That sounds nice, tell me more about it.",
    "Haha, yes, I know what you mean.",
    "Anyway, what have you been up to this week?",
    "Not much, mostly work and a bit of reading.",
    "The weather has been awful, it rained all weekend.",
    "We should get coffee sometime next week.",
    "Sure, I would like that a lot.",
    "Oh really? I did not know that about you.",
    "Let me know how it goes, I want to hear everything.",
    "I think that is a great idea, you should do it.",
    "Talk to you soon, take care!",
    "By the way, thanks again for your help the other day.",
]
_RELATIVES = ["cousin", "brother", "sister", "uncle", "aunt", "nephew"]
_FIRST = ["Lena", "Kofi", "Ines", "Ravi", "Sven", "Mei", "Dario", "Nadia", "Felix", "Yara", "Bruno", "Hana"]

# (fact, question in the fact's words, question in other words); slots: {a} speaker, {x} {y} values.
_TOPICS: list[tuple[str, str, str, list[str], list[str]]] = [
    (
        "{a}: We spent two weeks hiking in {x} with my {y}.",
        "Where did {a} go hiking with their {y}?",
        "Which region did {a} trek through with a relative?",
        ["Patagonia", "the Dolomites", "Iceland", "the Pyrenees", "Nepal", "the Scottish Highlands", "Norway", "Peru"],
        _RELATIVES,
    ),
    (
        "{a}: I finally adopted a {x} and I named her {y}.",
        "What did {a} name the {x} she adopted?",
        "What is the name of the new pet {a} brought home?",
        ["greyhound", "beagle", "tabby cat", "border collie", "parrot", "rabbit", "corgi", "siamese cat"],
        ["Comet", "Pepper", "Luna", "Biscuit", "Mochi", "Ziggy", "Olive", "Maple", "Nova", "Pickle"],
    ),
    (
        "{a}: I started taking {x} lessons every {y} evening.",
        "Which evening does {a} take {x} lessons?",
        "On what weekday does {a} go to class for a new hobby?",
        ["pottery", "salsa", "violin", "karate", "watercolor", "rock climbing", "Japanese", "sailing"],
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    ),
    (
        "{a}: My favorite dish lately is {x}, I cook it almost every {y}.",
        "What dish does {a} cook almost every {y}?",
        "Which meal has {a} been making over and over recently?",
        ["mushroom risotto", "chickpea curry", "shakshuka", "pad thai", "lentil soup", "beef ragu", "ramen", "paella"],
        ["weekend", "Sunday", "night", "week"],
    ),
    (
        "{a}: I got a new job as a {x} at a company in {y}.",
        "What new job did {a} get in {y}?",
        "What is {a}'s occupation now after switching employers?",
        ["data analyst", "nurse", "architect", "teacher", "sound engineer", "pilot", "chef", "translator"],
        ["Berlin", "Lisbon", "Toronto", "Osaka", "Nairobi", "Melbourne", "Oslo", "Denver"],
    ),
    (
        "{a}: I ran my first {x} last month and finished in {y}.",
        "How long did {a} take to finish the {x}?",
        "What was {a}'s time in that race a few weeks ago?",
        ["marathon", "half marathon", "triathlon", "10k race", "trail ultra"],
        [
            "three hours and forty minutes",
            "one hour fifty",
            "two hours flat",
            "four hours twelve",
            "fifty-eight minutes",
        ],
    ),
    (
        "{a}: I am reading {x} by {y} right now and I love it.",
        "Which book by {y} is {a} reading?",
        "What novel has {a} been enjoying at the moment?",
        ["The Glass Orchard", "Salt and Iron", "Night Ferry", "The Quiet Planet", "Paper Lanterns", "Winter Harbor"],
        ["Elena Marsh", "Kwame Osei", "Ruth Calder", "Jun Takeda", "Ana Lucero"],
    ),
    (
        "{a}: We are planning to move to {x} because my partner got into {y}.",
        "Why is {a} moving to {x}?",
        "What is the reason for {a}'s upcoming relocation?",
        ["Vienna", "Montreal", "Edinburgh", "Kyoto", "Valencia", "Copenhagen"],
        ["medical school", "a PhD program", "an art residency", "law school", "a research fellowship"],
    ),
]


def generate(seed: int = 33, conversations: int = 120, turns: int = 40, facts: int = 3) -> dict[str, Any]:
    """The set: ``{"entities": [{name, description, observations}], "questions": [{question, entity, kind}]}``."""
    rng = random.Random(seed)
    entities: list[dict[str, Any]] = []
    questions: list[dict[str, str]] = []
    used: set[tuple[int, str, str, str]] = set()
    for n in range(conversations):
        a, b = rng.sample(_CAST, 2)
        lines = [f"{rng.choice((a, b))}: {rng.choice(_SMALL_TALK)}" for _ in range(turns)]
        # Facts sit anywhere but the first few turns: deep inside the conversation.
        spots = rng.sample(range(5, turns), facts)
        for spot, topic in zip(spots, rng.sample(range(len(_TOPICS)), facts), strict=True):
            fact, own_words, other_words, xs, ys = _TOPICS[topic]
            speaker = rng.choice((a, b))
            # A question must have one answer: no speaker says two facts of a topic alike.
            for _ in range(50):
                x, y = rng.choice(xs), rng.choice(ys)
                if (topic, speaker, "x", x) not in used and (topic, speaker, "y", y) not in used:
                    break
            else:
                continue
            used.update({(topic, speaker, "x", x), (topic, speaker, "y", y)})
            lines[spot] = fact.format(a=speaker, x=x, y=y)
            name = f"chat {n}"
            questions.append({"question": own_words.format(a=speaker, x=x, y=y), "entity": name, "kind": "own words"})
            questions.append(
                {"question": other_words.format(a=speaker, x=x, y=y), "entity": name, "kind": "paraphrase"}
            )
        entities.append(
            {"name": f"chat {n}", "description": f"A conversation between {a} and {b}", "observations": lines}
        )
    return {"entities": entities, "questions": questions}


def load() -> dict[str, Any]:
    """The shipped set."""
    with gzip.open(PATH, "rt", encoding="utf-8") as file:
        data: dict[str, Any] = json.load(file)
    return data


if __name__ == "__main__":
    with gzip.GzipFile(PATH, "wb", mtime=0) as raw:
        raw.write(json.dumps(generate(), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    print(f"wrote {PATH}")
