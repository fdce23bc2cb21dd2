"""`dvc plots show` without a network: an HTML template with Vega inside.

DVC's plots page loads vega, vega-lite and vega-embed from a CDN, so on an air-gapped machine
its Vega plots are blank. `.dvc/config` points `plots.html_template` at `.dvc/plots/offline.html`,
which this module writes: DVC's own page with the three scripts inline, at the versions DVC links
(dvc_render.vega.VegaRenderer.SCRIPTS), from npm's tarballs checked against pinned sha256 sums.
The template is committed; rerun this only when DVC moves to other versions:

    python -m tinytf.report.vega_offline [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import tarfile
import urllib.request
from pathlib import Path

# DVC's script URL -> (npm tarball, its sha256, the script inside package/build/)
VEGA_SCRIPTS = {
    "https://cdn.jsdelivr.net/npm/vega@5.20.2": (
        "vega/-/vega-5.20.2.tgz",
        "d77deab01d6104b1239228720721f93003e60797d2faced7ffdd759fa70f989d",
        "vega.min.js",
    ),
    "https://cdn.jsdelivr.net/npm/vega-lite@5.2.0": (
        "vega-lite/-/vega-lite-5.2.0.tgz",
        "f64ca4745f043447ac86b67dc9e9592ec2b85ac8b8dafc35faf970f142463e4b",
        "vega-lite.min.js",
    ),
    "https://cdn.jsdelivr.net/npm/vega-embed@6.18.2": (
        "vega-embed/-/vega-embed-6.18.2.tgz",
        "93aeee312e92077b0252ef026c0fe0ec8fa430c19825aeada6cd3a6804e68e1b",
        "vega-embed.min.js",
    ),
}
TEMPLATE = Path(".dvc/plots/offline.html")
REGISTRY = "https://registry.npmjs.org"


def script(tarball: str, sha256: str, name: str, cache: Path) -> str:
    """The script `name` from npm's `tarball`, fetched once into `cache` and checked."""
    archive = cache / Path(tarball).name
    if not archive.exists():
        cache.mkdir(parents=True, exist_ok=True)
        urllib.request.urlretrieve(f"{REGISTRY}/{tarball}", archive)
    data = archive.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ValueError(f"{archive}: sha256 {digest}, expected {sha256}; delete it and run again")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.extractfile(f"package/build/{name}").read().decode("utf-8")


def template(cache: Path) -> str:
    """DVC's page with the scripts inline instead of its `{scripts}` placeholder (a Vega plot's
    CDN links are only ever added there)."""
    from dvc_render.html import PAGE_HTML
    from dvc_render.vega import VegaRenderer

    for url in VEGA_SCRIPTS:
        if url not in VegaRenderer.SCRIPTS:  # DVC moved to other versions: pin those instead
            raise ValueError(f"dvc_render no longer links {url}; update VEGA_SCRIPTS")
    # "</script" inside a script would end it early: none of the three holds it, but be sure
    parts = []
    for entry in VEGA_SCRIPTS.values():
        code = script(*entry, cache).replace("</script", "<\\/script")
        parts.append(f"<script>/* {entry[0]} from npm, as DVC links it */\n{code}\n</script>")
    return PAGE_HTML.replace("{scripts}", "\n".join(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache/tinytf/vega", help="tarball cache"
    )
    parser.add_argument("--out", type=Path, default=TEMPLATE, help=f"template to write (default {TEMPLATE})")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(template(args.cache), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
