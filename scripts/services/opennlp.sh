# Apache OpenNLP's command line tool for the ApplyOpenNLPNameFinders tests: they train small
# tokenizer and name finder models with it and compare its tokens and names with ours. Sourced
# by scripts/test.sh (set -euo pipefail); can also be sourced by hand.
#
# Idempotent: installs Debian's `opennlp` package (and the Java it needs) only when the
# `opennlp` command is missing. Nothing is started; exports LUCILLE_TEST_OPENNLP (the command).

_lucille_opennlp_main() {
    if ! command -v opennlp >/dev/null 2>&1; then
        echo "opennlp.sh: installing opennlp from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends opennlp >/dev/null
    fi
    command -v opennlp >/dev/null 2>&1 || { echo "opennlp.sh: no opennlp after installing" >&2; return 1; }
    export LUCILLE_TEST_OPENNLP="$(command -v opennlp)"
    echo "opennlp.sh: $LUCILLE_TEST_OPENNLP"
}

_lucille_opennlp_main
unset -f _lucille_opennlp_main
