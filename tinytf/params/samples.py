"""`pretrain.samples`: sentences the language model scores after training, and their default,
course report 004's normal / weird / long (params.yaml lists the same three)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SampleText:
    name: str
    text: str


# course report 004's sentences: normal, weird, and a long one from Saramago's Blindness
COURSE_SAMPLES = (
    ("normal", "Thank you so much Liwei and Taylor for all your help with this!"),
    ("weird", "After learning language models model natural language."),
    (
        "long",
        "On offering to help the blind man, the man who then stole his car, had not, at that "
        "precise moment, had any evil intention, quite the contrary, what he did was nothing "
        "more than obey those feelings of generosity and altruism which, as everyone knows, are "
        "the two best traits of human nature and to be found in much more hardened criminals "
        "than this one, a simple car-thief without any hope of advancing in his profession, "
        "exploited by the real owners of this enterprise, for it is they who take advantage of "
        "the needs of the poor.",
    ),
)
