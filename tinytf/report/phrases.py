"""How the report words a number: each a Jinja filter of the README's templates
(tinytf.report.render), fed the small test dicts and figures the view holds."""

from __future__ import annotations

import math


def fmt(value, spec: str) -> str:
    """Python's format mini-language from a template: `{{ x|fmt("+.1f") }}`."""
    return format(value, spec)


def pct(x: float) -> str:
    return f"{x:.1%}"


def pp(x: float) -> str:
    return f"{x * 100:+.1f} pp"


def pm(mean: float, std: float | None, digits: int) -> str:
    """'12.3 ± 0.4', or the mean alone where there is no spread (one seed: std None or NaN)."""
    if std is None or math.isnan(std):
        return f"{mean:,.{digits}f}"
    return f"{mean:,.{digits}f} ± {std:,.{digits}f}"


def starts_text(starts: dict) -> str:
    """{start: [mean, std]} as 'pretrained 71.2% ± 1.1 pp, scratch ...'."""
    return ", ".join(f"{start} {pct(mean)} ± {std * 100:.1f} pp" for start, (mean, std) in starts.items())


def no_spread(test: dict) -> bool:
    """Several seeds, every one with the same nonzero difference: a t-test divides by zero, and
    only a sign test could decide (`tinytf.analysis.evaluation.paired_comparison` decided both,
    with its float tolerance, and leaves the sign test out where it cannot reject)."""
    return test.get("p_value") is None and test["n"] > 1 and test.get("mean_difference", 0) != 0


def paired_text(test: dict) -> str:
    t, p = test.get("t"), test.get("p_value")
    one_sample = test.get("test", "paired t") != "paired t"
    if t is not None and p is not None:
        stats = f"{'one-sample ' if one_sample else ''}t = {t:.2f}, p = {p:.3g}"
        if test.get("p_holm") is not None:
            stats += f", Holm-adjusted p = {test['p_holm']:.3g}"
    elif no_spread(test) and test.get("sign_test_p") is not None:
        stats = f"the same in every seed, so no t-test; a sign test gives p = {test['sign_test_p']:.3g}"
    elif no_spread(test) and (test.get("items") or {}).get("p_value") is not None:
        stats = (
            f"the same in every seed, so no t-test; over the {test['items']['n_items']:,} test texts "
            f"p = {test['items']['p_value']:.3g}"
        )
    elif no_spread(test):
        stats = (
            f"the same in every seed, so no t-test; {test['n']} seeds are too few for a sign test to "
            f"reject (its smallest p is {2 / 2 ** test['n']:.3g})"
        )
    else:
        stats = "no spread: t-test undefined"
    seeds = "seeds against one fit" if one_sample else "paired seeds"
    return f"{pp(test['mean_difference'])} ({stats}, {test['n']} {seeds})"


def multiboot_text(test: dict) -> str:
    """'95 % CI [+0.4, +3.8] over seeds and test movies at once (multi-bootstrap p = 0.01, Holm p =
    0.03)' where the summary has it (protocol v3), else ''."""
    boot = test.get("multiboot")
    if boot is None:
        return ""
    drawn = " and ".join(
        {"seed": "seeds", "pretraining run": "pretraining runs"}.get(s, f"test {s}s") for s in boot["sources"]
    )
    holm = f", Holm p = {boot['p_holm']:.3g}" if boot.get("p_holm") is not None else ""
    return f"{interval(boot)} over {drawn} at once (multi-bootstrap p = {boot['p_value']:.3g}{holm})"


def interval(boot: dict) -> str:
    low, high = (100 * x for x in boot["ci95"])
    return f"95 % CI [{low:+.1f}, {high:+.1f}]"


def holm_text(test: dict) -> str:
    if test.get("p_holm") is not None:
        return f"Holm p = {test['p_holm']:.3g}"
    return "no spread over seeds: no t-test"


def items_text(test: dict) -> str:
    """'; over the 1,275 test texts +2.1 points, p = 0.03' where the summary has the item test."""
    items = test.get("items")
    if not items:
        return ""
    return (
        f"; over the {items['n_items']:,} test texts {100 * items['mean_difference']:+.1f} points, "
        f"p = {items['p_value']:.3g}"
    )


def p_text(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3g}"


FILTERS = {
    f.__name__: f
    for f in (
        fmt,
        pct,
        pp,
        pm,
        starts_text,
        paired_text,
        multiboot_text,
        interval,
        holm_text,
        items_text,
        p_text,
    )
}
