from __future__ import annotations

import io
import stat
import zipfile

import pytest

from core.services.uploads import UploadLimits, UploadRejected, extract_upload, inspect_upload

AGENT = (
    b"from arena_sdk import agent\n\n@agent\ndef play(turn):\n    return turn.legal_actions[0]\n"
)


def make_zip(entries: dict[str, bytes], *, links: tuple[str, ...] = (), modes=None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            mode = (modes or {}).get(name, 0o644)
            info.external_attr = (stat.S_IFREG | mode) << 16
            archive.writestr(info, content)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_it_accepts_a_single_python_file_as_main():
    summary = inspect_upload("my_bot.py", AGENT)

    assert summary.entry_point == "main.py"
    assert summary.files == ("main.py",)


def test_it_finds_the_entry_point_and_requirements_in_a_zip():
    content = make_zip({"agent.py": AGENT, "weights.txt": b"1 2 3", "requirements.txt": b"numpy"})
    summary = inspect_upload("bot.zip", content)

    assert summary.entry_point == "agent.py"
    assert summary.has_requirements


def test_it_strips_the_folder_a_zipped_folder_sits_in(tmp_path):
    content = make_zip({"bot/main.py": AGENT, "bot/lib/helpers.py": b"X = 1\n"})
    summary = extract_upload("bot.zip", content, tmp_path)

    assert summary.entry_point == "main.py"
    assert (tmp_path / "main.py").read_bytes() == AGENT
    assert (tmp_path / "lib" / "helpers.py").exists()


def test_it_keeps_an_executable_entry_point_executable(tmp_path):
    content = make_zip({"agent": b"#!/bin/sh\n"}, modes={"agent": 0o755})
    extract_upload("bot.zip", content, tmp_path)

    assert (tmp_path / "agent").stat().st_mode & 0o111


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        ("bot.py", b"", "the file is empty"),
        ("bot.tar.gz", b"\x1f\x8b rest", "upload a single .py file or a .zip"),
        ("bot.zip", b"PK not really a zip", "not a valid zip"),
        ("bot.py", b"\xff\xfe\x00bad", "UTF-8"),
        ("bot.zip", make_zip({"/etc/cron.d/x": AGENT, "main.py": AGENT}), "absolute path"),
        ("bot.zip", make_zip({"../outside.py": AGENT, "main.py": AGENT}), "leaves its folder"),
        ("bot.zip", make_zip({"a/../../b.py": AGENT, "main.py": AGENT}), "leaves its folder"),
        ("bot.zip", make_zip({"main.py": AGENT}, links=("data",)), "symbolic link"),
        ("bot.zip", make_zip({"helper.py": AGENT}), "no entry point"),
        ("bot.zip", make_zip({"agent": b"#!/bin/sh\n"}), "not executable"),
    ],
)
def test_it_rejects_a_bad_upload_with_the_reason(filename, content, message):
    with pytest.raises(UploadRejected, match=message):
        inspect_upload(filename, content)


def test_it_rejects_an_upload_over_the_size_cap():
    with pytest.raises(UploadRejected, match="at most 100 are allowed"):
        inspect_upload("bot.py", b"#" * 101, UploadLimits(max_upload_bytes=100))


def test_it_rejects_too_many_files():
    entries = {f"f{i}.txt": b"x" for i in range(11)} | {"main.py": AGENT}
    with pytest.raises(UploadRejected, match="holds 12 files; at most 10"):
        inspect_upload("bot.zip", make_zip(entries), UploadLimits(max_files=10))


def test_it_rejects_a_zip_bomb_by_its_unpacked_size():
    bomb = make_zip({"main.py": AGENT, "zeros.bin": b"\0" * 5_000_000})

    assert len(bomb) < 50_000
    with pytest.raises(UploadRejected, match="unpacks to"):
        inspect_upload("bot.zip", bomb, UploadLimits(max_unpacked_bytes=1_000_000))


def test_it_refuses_an_archive_whose_headers_lie(tmp_path):
    content = bytearray(make_zip({"main.py": AGENT, "zeros.bin": b"\0" * 200_000}))
    # Forge the uncompressed size in zeros.bin's central directory entry (offset 24),
    # so the check up front sees 10 bytes where 200,000 are packed.
    entry = content.rfind(b"PK\x01\x02")
    assert content[entry + 46 : entry + 46 + 9] == b"zeros.bin"
    content[entry + 24 : entry + 28] = (10).to_bytes(4, "little")

    with pytest.raises(UploadRejected, match=r"cannot be read|unpacks to"):
        extract_upload("bot.zip", bytes(content), tmp_path)
