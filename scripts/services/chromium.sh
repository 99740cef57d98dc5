# A real headless browser for the web console's tests: Debian's Chromium and its WebDriver
# (selenium drives it; nothing is downloaded at test time). Sourced by scripts/test.sh
# (set -euo pipefail); can also be sourced by hand.
#
# Idempotent: installs chromium and chromium-driver from Debian when missing (and a font, so
# the screenshots have text); nothing is started (each test starts its own browser). Exports
# LUCILLE_TEST_CHROMIUM and LUCILLE_TEST_CHROMEDRIVER.

_lucille_chromium_main() {
    local missing=()
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
    dpkg -s fonts-dejavu-core >/dev/null 2>&1 || missing+=(fonts-dejavu-core)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "chromium.sh: installing ${missing[*]} from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    export LUCILLE_TEST_CHROMIUM="$(command -v chromium)"
    export LUCILLE_TEST_CHROMEDRIVER="$(command -v chromedriver)"
    echo "chromium.sh: $LUCILLE_TEST_CHROMIUM with $LUCILLE_TEST_CHROMEDRIVER"
}

_lucille_chromium_main
unset -f _lucille_chromium_main
