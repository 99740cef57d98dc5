# Document tools for the TextExtractor / ApplyOCR tests and bench/extract. Sourced by
# scripts/test.sh (set -euo pipefail); can also be sourced by hand.
#
# Idempotent: installs from Debian only what is missing -- LibreOffice without a GUI (writer,
# calc, impress: the test fixtures are converted from text the tests write), qpdf (encrypts a
# fixture PDF), poppler-utils (pdftotext, the benchmark's reference), Tesseract with its
# English model and C library (ApplyOCR loads libtesseract at run time) and ImageMagick (renders
# the OCR test image). Nothing is started; exports LUCILLE_TEST_LIBREOFFICE (the soffice
# command) and LUCILLE_TEST_TESSERACT=1 when the library is present.

_lucille_lo_main() {
    local missing=() pkg
    command -v soffice >/dev/null 2>&1 || missing+=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)
    command -v qpdf >/dev/null 2>&1 || missing+=(qpdf)
    command -v pdftotext >/dev/null 2>&1 || missing+=(poppler-utils)
    command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr tesseract-ocr-eng)
    ldconfig -p 2>/dev/null | grep -q 'libtesseract\.so' || missing+=(libtesseract-dev)
    # /usr/local/bin may hold a stand-in `convert`: ask dpkg for the real ImageMagick.
    dpkg -s imagemagick >/dev/null 2>&1 || missing+=(imagemagick)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "libreoffice.sh: installing ${missing[*]} from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    for pkg in soffice qpdf pdftotext tesseract; do
        command -v "$pkg" >/dev/null 2>&1 || { echo "libreoffice.sh: no $pkg after installing" >&2; return 1; }
    done
    export LUCILLE_TEST_LIBREOFFICE="$(command -v soffice)"
    if ldconfig -p 2>/dev/null | grep -q 'libtesseract\.so'; then
        export LUCILLE_TEST_TESSERACT=1
    fi
    echo "libreoffice.sh: $LUCILLE_TEST_LIBREOFFICE"
}

_lucille_lo_main
unset -f _lucille_lo_main
