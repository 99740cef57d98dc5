"""TextExtractor and the FileConnector's `documents` handler on real files: office documents,
PDFs, an EPUB and an RTF generated here with LibreOffice (Debian's, headless) from text the test
controls, plus hand-made edge cases (a password-encrypted PDF made with qpdf, a PDF without a
text layer made with ImageMagick, a truncated DOCX, a 200-page PDF). The extracted text must
contain what was written; what cannot be extracted FAILs with its reason.

The generated files are made once per test session (LibreOffice starts slowly). Needs
`source scripts/services/libreoffice.sh`; skipped without LibreOffice unless
LUCILLE_REQUIRE_SERVICES=1."""

import base64
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import zlib
from typing import Any

import pytest

import lucille
from services import missing

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "data" / "documents"

REPORT_WORDS = ["Heading Alpha", "xylophone", "quokka", "Café déjà vu", "naïve façade", "marmalade"]


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        missing(f"{tool} is not installed (source scripts/services/libreoffice.sh)")
    return path


def imagemagick() -> str:
    """The real ImageMagick (a stand-in `convert` may come first on PATH)."""
    for candidate in ("/usr/bin/convert", "/usr/bin/convert-im6.q16", shutil.which("magick")):
        if candidate and os.path.exists(candidate):
            return candidate
    return need("imagemagick-convert")


def render_text(text: str, width: int = 900, height: int = 200) -> tuple[int, int, bytes]:
    """8-bit gray pixels of `text` drawn by ImageMagick (Debian's policy forbids it writing PDF,
    so the PDF around the image is written by `image_pdf`)."""
    raw = subprocess.run(
        [imagemagick(), "-size", f"{width}x{height}", "xc:white", "-font", "DejaVu-Sans",
         "-fill", "black", "-pointsize", "56", "-draw", f"text 30,120 '{text}'",
         "-depth", "8", "gray:-"], check=True, capture_output=True).stdout
    assert len(raw) == width * height
    return width, height, raw


def image_pdf(width: int, height: int, gray: bytes) -> bytes:
    """A one-page PDF whose only content is a Flate-compressed gray image: no text layer."""
    data = zlib.compress(gray)
    content = f"q {width} 0 0 {height} 0 0 cm /Im0 Do Q".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] "
        f"/Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>".encode(),
        f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace /DeviceGray "
        f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(data)} >>\nstream\n".encode()
        + data + b"\nendstream",
        f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for o in offsets:
        out += f"{o:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def long_fodt(pages: int) -> str:
    paras = "\n".join(
        f'<text:p text:style-name="{"PB" if i else "Standard"}">Page {i + 1} of the long document.</text:p>'
        for i in range(pages)
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
  xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
  office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
 <office:automatic-styles>
  <style:style style:name="PB" style:family="paragraph"><style:paragraph-properties fo:break-before="page"/></style:style>
 </office:automatic-styles>
 <office:body><office:text>
{paras}
 </office:text></office:body>
</office:document>
"""


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """Every fixture file by name, generated once per session."""
    soffice = need("soffice")
    work = tmp_path_factory.mktemp("documents")
    src = work / "src"
    out = work / "out"
    src.mkdir()
    out.mkdir()
    for f in SOURCES.glob("*.fod?"):
        shutil.copy(f, src / f.name)
    (src / "long.fodt").write_text(long_fodt(200))
    profile = (work / "profile").as_uri()

    def convert(fmt: str, *names: str) -> None:
        subprocess.run(
            [soffice, f"-env:UserInstallation={profile}", "--headless", "--convert-to", fmt,
             "--outdir", str(out), *[str(src / n) for n in names]],
            check=True, capture_output=True, timeout=300,
        )

    convert("pdf", "report.fodt", "slides.fodp", "long.fodt")
    for fmt in ("docx", "odt", "rtf", "epub", "html"):
        convert(fmt, "report.fodt")
    for fmt in ("xlsx", "ods"):
        convert(fmt, "inventory.fods")
    for fmt in ("pptx", "odp"):
        convert(fmt, "slides.fodp")

    edge = work / "edge"
    edge.mkdir()
    qpdf = need("qpdf")
    subprocess.run([qpdf, "--encrypt", "secret-user", "secret-owner", "256", "--",
                    str(out / "report.pdf"), str(edge / "locked.pdf")], check=True)
    subprocess.run([qpdf, "--encrypt", "", "owner-only", "256", "--",
                    str(out / "report.pdf"), str(edge / "owner-only.pdf")], check=True)
    docx = (out / "report.docx").read_bytes()
    (edge / "truncated.docx").write_bytes(docx[: len(docx) // 2])
    width, height, gray = render_text("Hello scanned world")
    (edge / "scan.pdf").write_bytes(image_pdf(width, height, gray))

    files = {p.name: p for p in out.iterdir()}
    files.update({p.name: p for p in edge.iterdir()})
    return files


def mixed_folder(tmp_path: pathlib.Path, generated: dict[str, pathlib.Path], names: list[str]) -> pathlib.Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for n in names:
        shutil.copy(generated[n], folder / n)
    (folder / "note.eml").write_bytes(
        b"From: Ada <ada@example.org>\r\nTo: bob@example.org\r\nSubject: Lunch with the wombat\r\n"
        b"Date: Tue, 1 Apr 2025 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nMeet at noon by the gazebo.\r\n")
    (folder / "page.htm").write_text(
        "<!doctype html><html><head><title>Web Page</title><style>p{}</style></head>"
        "<body><h1>Kiwi heading</h1><p>Body about a tapir.</p><script>var hidden=1;</script></body></html>")
    # A name that lies about the content: detected as PDF by its bytes.
    shutil.copy(generated["report.pdf"], folder / "misnamed.txt")
    (folder / "plain.txt").write_text("Plain words: ocelot and ibis.\n")
    return folder


def doc_id(path: pathlib.Path) -> str:
    return hashlib.md5(str(path).encode()).hexdigest()


def run_folder(folder: pathlib.Path, **handler: Any) -> lucille.RunResult:
    config = {
        "connectors": [{
            "name": "files", "class": "FileConnector", "pipeline": "p", "paths": [str(folder)],
            "fileHandlers": {"documents": {"metadataPrefix": "", **handler}},
        }],
        "pipelines": [{"name": "p", "stages": []}],
    }
    return lucille.run(config=config, mode="test")


ALL = ["report.pdf", "report.docx", "report.odt", "report.rtf", "report.epub", "report.html",
       "inventory.xlsx", "inventory.ods", "slides.pptx", "slides.odp", "slides.pdf",
       "locked.pdf", "owner-only.pdf", "truncated.docx", "scan.pdf"]


def test_a_mixed_folder_indexes_with_one_handler(tmp_path: pathlib.Path, generated: dict[str, pathlib.Path]) -> None:
    folder = mixed_folder(tmp_path, generated, ALL)
    r = run_folder(folder)
    assert r.status == "Success", r.summary
    docs = {d.get("file_name"): d for d in r.documents}
    fails = {doc_id: message or "" for doc_id, kind, message in r.events if kind == "FAIL"}

    for name in ["report.pdf", "report.docx", "report.odt", "report.rtf", "report.epub",
                 "report.html", "misnamed.txt", "owner-only.pdf"]:
        text = docs[name].get("text")
        for word in REPORT_WORDS:
            assert word in text, (name, word, text)
        assert docs[name].get("dc_title") == "Quarterly Zebra Report", name
        assert docs[name].get("dc_creator") == "Ada Lovelace", name
        assert docs[name].get("file_path") == str(folder / name)
        assert docs[name].id == doc_id(folder / name)
        assert not docs[name].has("file_content")
    assert docs["misnamed.txt"].get("content_type") == "application/pdf"
    assert docs["report.pdf"].get("xmptpg_npages") == "1"
    assert docs["report.docx"].get("content_type").endswith("wordprocessingml.document")
    assert docs["report.odt"].get("dcterms_created").startswith("2025-02-03T04:05")
    for name in ["inventory.xlsx", "inventory.ods"]:
        text = docs[name].get("text")
        assert "kumquat\t42" in text and "persimmon\t7" in text, (name, text)
        assert docs[name].get("dc_title") == "Fruit Inventory", name
    for name in ["slides.pptx", "slides.odp", "slides.pdf"]:
        text = docs[name].get("text")
        assert text.index("platypus") < text.index("narwhal"), (name, text)
        assert docs[name].get("dc_title") == "Deck of Animals", name
    for name in ["slides.pptx", "slides.odp", "slides.pdf"]:
        assert docs[name].get("xmptpg_npages") == "2", name
    assert "Meet at noon by the gazebo." in docs["note.eml"].get("text")
    assert docs["note.eml"].get("dc_title") == "Lunch with the wombat"
    assert docs["note.eml"].get("message_from_email") == "ada@example.org"
    page = docs["page.htm"].get("text")
    assert "Kiwi heading" in page and "tapir" in page and "hidden" not in page
    assert docs["plain.txt"].get("text") == "Plain words: ocelot and ibis.\n"
    # No text layer (and no OCR configured): extracted, with no text.
    assert docs["scan.pdf"].get("text").strip() == ""
    assert docs["scan.pdf"].get("xmptpg_npages") == "1"

    assert set(fails) == {doc_id(folder / "locked.pdf"), doc_id(folder / "truncated.docx")}, fails
    assert "encrypted PDF" in fails[doc_id(folder / "locked.pdf")]
    assert "corrupt ZIP" in fails[doc_id(folder / "truncated.docx")]
    assert str(folder / "locked.pdf") in fails[doc_id(folder / "locked.pdf")]
    assert (r.published, r.succeeded, r.failed) == (len(ALL) + 4, len(ALL) + 2, 2)


def test_a_200_page_pdf_whole_and_bounded(tmp_path: pathlib.Path, generated: dict[str, pathlib.Path]) -> None:
    folder = mixed_folder(tmp_path, generated, ["long.pdf"])
    r = run_folder(folder, extensions=["pdf"])
    docs = {d.get("file_name"): d for d in r.documents}
    # Only .pdf files are the handler's: the others are whole-file documents with content.
    assert docs["plain.txt"].get("file_content") == "Plain words: ocelot and ibis.\n"
    long = docs["long.pdf"]
    assert long.get("xmptpg_npages") == "200"
    assert "Page 1 of the long document." in long.get("text")
    assert "Page 200 of the long document." in long.get("text")

    bounded = run_folder(folder, extensions=["pdf"], textContentLimit=500)
    text = {d.get("file_name"): d for d in bounded.documents}["long.pdf"].get("text")
    assert len(text) == 500
    assert "Page 1 of" in text and "Page 200 of" not in text


def test_text_extractor_on_file_content_as_in_lucilles_example(tmp_path: pathlib.Path, generated: dict[str, pathlib.Path]) -> None:
    """Lucille's opensearch-ingest example: FileConnector content -> TextExtractor by its full
    class name, no prefix, a blacklist of metadata."""
    folder = mixed_folder(tmp_path, generated, ["report.docx", "report.rtf", "locked.pdf"])
    config = {
        "connectors": [{"name": "files", "class": "FileConnector", "pipeline": "p",
                        "paths": [str(folder)], "contentFormat": "base64"}],
        "pipelines": [{"name": "p", "stages": [{
            "name": "TextExtractor", "class": "com.kmwllc.lucille.tika.stage.TextExtractor",
            "byteArrayField": "file_content", "metadataPrefix": "",
            "blacklist": ["dc_creator", "content_type"], "fieldNamesField": "tika_fields",
        }]}],
    }
    r = lucille.run(config=config, mode="test")
    docs = {d.get("file_name"): d for d in r.documents}
    for name in ["report.docx", "report.rtf"]:
        assert "xylophone" in docs[name].get("text")
        assert docs[name].get("dc_title") == "Quarterly Zebra Report"
        assert not docs[name].has("dc_creator") and not docs[name].has("content_type")
        assert "dc_title" in docs[name].get_list("tika_fields")
    assert "Meet at noon" in docs["note.eml"].get("text")
    fails = [m or "" for _, kind, m in r.events if kind == "FAIL"]
    assert len(fails) == 1 and "encrypted PDF" in fails[0], fails


def test_text_extractor_from_a_path_in_a_notebook(generated: dict[str, pathlib.Path]) -> None:
    p = lucille.Pipeline([lucille.stages.TextExtractor(filePathField="path", textField="body",
                                                      maxLength=40)])
    [doc] = p.process(lucille.Document("d", {"path": str(generated["report.odt"])}))
    assert doc.get("body") == "Heading Alpha\nParagraph one mentions the"  # 40 characters
    assert doc.get("tika_dc_title") == "Quarterly Zebra Report"
    # Bytes in a field, base64 as Lucille's byte[].
    p = lucille.Pipeline([lucille.stages.TextExtractor(byteArrayField="bytes")])
    raw = base64.b64encode(generated["inventory.xlsx"].read_bytes()).decode()
    [doc] = p.process(lucille.Document("x", {"bytes": raw}))
    assert "kumquat" in doc.get("text")


def test_tika_only_keys_are_config_errors_with_advice(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "t.conf"
    conf.write_text("""
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1, pipeline: "p" }]
        pipelines: [{ name: "p", stages: [
            { class: "com.kmwllc.lucille.tika.stage.TextExtractor", byteArrayField: "file_content",
              tikaConfigPath: "conf/tika-config.xml", parseTimeout: 1000 }
        ] }]
    """)
    # A tika-config.xml that excludes a type: there is no such choice here.
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "tika-config.xml").write_text(
        '<properties><parsers><parser class="org.apache.tika.parser.DefaultParser">'
        "<mime-exclude>application/pdf</mime-exclude></parser></parsers></properties>")
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1
    assert "parseTimeout" in r.stderr and "worker.maxProcessingSecs" in r.stderr, r.stderr
    conf.write_text(conf.read_text().replace(", parseTimeout: 1000", ""))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1
    assert "tikaConfigPath" in r.stderr and "no Apache Tika" in r.stderr, r.stderr
    # Lucille's examples' file only picks the default and RFC 822 parsers: accepted.
    (tmp_path / "conf" / "tika-config.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><properties><parsers>'
        '<parser class="org.apache.tika.parser.DefaultParser"/>'
        '<parser class="org.apache.tika.parser.mail.RFC822Parser"/></parsers></properties>')
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
