"""ApplyOCR, and TextExtractor's OCR fallback, on Tesseract (Debian's libtesseract, loaded at run
time): images rendered by ImageMagick from known text, and a PDF whose only page is an image.
The recognised words are checked. Needs `source scripts/services/libreoffice.sh` (it installs
Tesseract and ImageMagick); skipped without them unless LUCILLE_REQUIRE_SERVICES=1."""

import ctypes.util
import pathlib
import subprocess
from typing import Any

import pytest

import lucille
from services import missing
from test_text_extraction import image_pdf, imagemagick, render_text


@pytest.fixture(scope="module", autouse=True)
def tesseract() -> None:
    if ctypes.util.find_library("tesseract") is None:
        missing("libtesseract is not installed (source scripts/services/libreoffice.sh)")


def words(text: Any) -> list[str]:
    return [w.strip(".,").lower() for w in text.split()]


@pytest.fixture(scope="module")
def form(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A 900x300 PNG with two lines of text, one above the other."""
    path = tmp_path_factory.mktemp("ocr") / "form.png"
    subprocess.run([imagemagick(), "-size", "900x300", "xc:white", "-font", "DejaVu-Sans", "-fill", "black",
                    "-pointsize", "48", "-draw", "text 30,90 'Invoice seventeen'",
                    "-draw", "text 30,230 'Total ninety'", str(path)], check=True)
    return path


def test_apply_ocr_reads_an_image_and_template_regions(form: pathlib.Path) -> None:
    stage = lucille.stages.ApplyOCR(
        lang="eng", pathField="path", extractAllDest="ocr_text",
        extractionTemplates=[{"name": "invoice", "regions": [
            {"x": 0, "y": 0, "width": 900, "height": 150, "dest": "header"},
            {"x": 0, "y": 150, "width": 900, "height": 150, "dest": "total"}]}],
        pages={"0": "invoice"})
    [doc] = lucille.Pipeline([stage]).process(lucille.Document("d", {"path": str(form)}))
    assert words(doc.get("ocr_text")) == ["invoice", "seventeen", "total", "ninety"], doc.get("ocr_text")
    assert words(doc.get("header")) == ["invoice", "seventeen"]
    assert words(doc.get("total")) == ["total", "ninety"]
    # A document without the path field is left alone.
    [other] = lucille.Pipeline([stage]).process(lucille.Document("e", {"x": 1}))
    assert not other.has("ocr_text")


def test_apply_ocr_on_an_image_only_pdf_page(tmp_path: pathlib.Path) -> None:
    width, height, gray = render_text("Hello scanned world")
    pdf = tmp_path / "scan.pdf"
    pdf.write_bytes(image_pdf(width, height, gray))
    stage = lucille.stages.ApplyOCR(lang="eng", pathField="path", extractAllDest="pages_text")
    [doc] = lucille.Pipeline([stage]).process(lucille.Document("d", {"path": str(pdf)}))
    assert words(doc.get("pages_text")) == ["hello", "scanned", "world"], doc.get("pages_text")


def test_text_extractor_falls_back_to_ocr_for_pages_without_text(tmp_path: pathlib.Path, form: pathlib.Path) -> None:
    width, height, gray = render_text("Hello scanned world")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(image_pdf(width, height, gray))
    (folder / "form.png").write_bytes(form.read_bytes())
    config = {
        "connectors": [{"name": "files", "class": "FileConnector", "pipeline": "p", "paths": [str(folder)],
                        "fileHandlers": {"documents": {"ocrLang": "eng", "metadataPrefix": ""}}}],
        "pipelines": [{"name": "p", "stages": []}],
    }
    r = lucille.run(config=config, mode="test")
    assert r.status == "Success" and r.failed == 0, r.summary
    docs = {d.get("file_name"): d for d in r.documents}
    assert words(docs["scan.pdf"].get("text")) == ["hello", "scanned", "world"]
    assert docs["scan.pdf"].get("x_ocr_pages") == "1"
    assert words(docs["form.png"].get("text")) == ["invoice", "seventeen", "total", "ninety"]
    assert docs["form.png"].get("content_type") == "image/png"


def test_bad_ocr_configs_fail_validation(tmp_path: pathlib.Path) -> None:
    with pytest.raises(Exception, match="no model for language"):
        lucille.Pipeline([lucille.stages.ApplyOCR(lang="xx-nope", pathField="p")])
    with pytest.raises(Exception, match="extractionTemplates"):
        lucille.Pipeline([lucille.stages.ApplyOCR(lang="eng", pathField="p", pages={"0": "t"})])
