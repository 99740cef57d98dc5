"""ApplyOpenNLPNameFinders against the real Apache OpenNLP (Debian's `opennlp`, installed by
scripts/services/opennlp.sh): models are trained here with OpenNLP's command line tool on
synthetic sentences (GIS, perceptron, and GIS with a custom feature-generator descriptor),
held-out text is run through the Java TokenizerME and TokenNameFinder tools, and the stage must
find exactly the names Java found, on the tokens Java made. Bad model configs are config errors
at their keys."""

import json
import pathlib
import random
import subprocess
import sys
from dataclasses import dataclass

import pytest

import lucille
from lucille import Document, Pipeline
from services import service_env

FIRST = ["John", "Mary", "Pierre", "Anna", "Carlos", "Mei", "David", "Fatima", "Olga", "Ravi", "Laura",
         "Tom", "Ines", "Kenji", "Sara", "Ahmed"]
LAST = ["Smith", "Vinken", "Garcia", "Chen", "Novak", "Okafor", "Rossi", "Kumar", "Weber", "Dubois",
        "Silva", "Tanaka"]
CITY = ["Paris", "London", "Boston", "Madrid", "Tokyo", "Berlin", "Lagos", "Lima", "Oslo", "Cairo",
        "New York", "Buenos Aires", "Cape Town", "Denver"]
TEMPLATES = [
    "{p} visited {l} last week .",
    "Yesterday {p} flew from {l} to {l2} .",
    "The mayor of {l} met {p} on Monday .",
    "{p} said the weather in {l} was fine .",
    "According to {p} , prices in {l} rose 3.5 % in 2019 .",
    "{p} and {p2} opened a shop in {l} .",
    "It rained in {l} , said {p} .",
    "Reports from {l} ( near {l2} ) reached {p} today .",
    "{p} , a teacher from {l} , won the prize .",
]

# The current descriptor format, with generators the default does not use.
CUSTOM_FEATUREGEN = """<featureGenerators cache="true" name="nameFinder">
  <generator class="opennlp.tools.util.featuregen.WindowFeatureGeneratorFactory">
    <int name="prevLength">2</int>
    <int name="nextLength">2</int>
    <generator class="opennlp.tools.util.featuregen.TokenClassFeatureGeneratorFactory"/>
  </generator>
  <generator class="opennlp.tools.util.featuregen.WindowFeatureGeneratorFactory">
    <int name="prevLength">1</int>
    <int name="nextLength">1</int>
    <generator class="opennlp.tools.util.featuregen.TokenFeatureGeneratorFactory"/>
  </generator>
  <generator class="opennlp.tools.util.featuregen.PrefixFeatureGeneratorFactory">
    <int name="length">3</int>
  </generator>
  <generator class="opennlp.tools.util.featuregen.SuffixFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.DefinitionFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.PreviousMapFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.BigramNameFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.SentenceFeatureGeneratorFactory">
    <bool name="begin">true</bool>
    <bool name="end">true</bool>
  </generator>
</featureGenerators>
"""


def sentence(rng: random.Random, tagged: bool) -> str:
    def person() -> str:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}" if rng.random() < 0.7 else rng.choice(FIRST)
        return f"<START:person> {name} <END>" if tagged else name

    def place() -> str:
        name = rng.choice(CITY)
        return f"<START:location> {name} <END>" if tagged else name

    return rng.choice(TEMPLATES).format(p=person(), p2=person(), l=place(), l2=place())


def attach_punctuation(tokens: str, mark: str) -> str:
    """Tokenizer training text: punctuation written against its neighbour, with `mark` between."""
    for punct in [" .", " ,", " %", " )"]:
        tokens = tokens.replace(punct, mark + punct.strip())
    return tokens.replace("( ", "(" + mark)


@dataclass
class Models:
    tokenizer: pathlib.Path
    finders: dict[str, pathlib.Path]
    heldout: list[str]


def opennlp(command: str, *args: str, stdin: str = "") -> str:
    done = subprocess.run([command, *args], input=stdin, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    command = service_env("LUCILLE_TEST_OPENNLP", "opennlp.sh")
    d = tmp_path_factory.mktemp("opennlp")
    rng = random.Random(7)
    (d / "tokens.train").write_text(
        "\n".join(attach_punctuation(sentence(rng, False), "<SPLIT>") for _ in range(400)) + "\n")
    (d / "names.train").write_text("\n".join(sentence(rng, True) for _ in range(400)) + "\n")
    (d / "gis.params").write_text("Algorithm=MAXENT\nIterations=100\nCutoff=1\n")
    (d / "perceptron.params").write_text("Algorithm=PERCEPTRON\nIterations=100\nCutoff=1\n")
    (d / "custom.xml").write_text(CUSTOM_FEATUREGEN)
    heldout = [attach_punctuation(sentence(rng, False), "") for _ in range(60)]
    opennlp(command, "TokenizerTrainer", "-lang", "en", "-alphaNumOpt", "true", "-encoding", "UTF-8",
            "-model", str(d / "token.bin"), "-data", str(d / "tokens.train"))
    finders = {
        # GIS, one type per model, as Lucille's en-ner-*.bin models are.
        "PERSON": ["-nameTypes", "person", "-params", str(d / "gis.params")],
        "LOCATION": ["-nameTypes", "location", "-params", str(d / "perceptron.params")],
        "CUSTOM": ["-params", str(d / "gis.params"), "-featuregen", str(d / "custom.xml")],
    }
    paths = {}
    for field, extra in finders.items():
        paths[field] = d / f"ner-{field.lower()}.bin"
        opennlp(command, "TokenNameFinderTrainer", "-lang", "en", "-encoding", "UTF-8",
                "-model", str(paths[field]), "-data", str(d / "names.train"), *extra)
    return Models(d / "token.bin", paths, heldout)


def java_tokens(models: Models) -> list[list[str]]:
    command = service_env("LUCILLE_TEST_OPENNLP", "opennlp.sh")
    out = opennlp(command, "TokenizerME", str(models.tokenizer), stdin="\n".join(models.heldout) + "\n")
    lines = [line.split(" ") for line in out.splitlines() if line.strip()]
    assert len(lines) == len(models.heldout)
    return lines


def java_names(models: Models, tokens: list[list[str]], *finders: pathlib.Path) -> list[list[str]]:
    """The names TokenNameFinder marks in each tokenized line; an empty line between documents
    clears the finders' adaptive data, as the stage does per document."""
    command = service_env("LUCILLE_TEST_OPENNLP", "opennlp.sh")
    stdin = "".join(" ".join(t) + "\n\n" for t in tokens)
    out = opennlp(command, "TokenNameFinder", *map(str, finders), stdin=stdin)
    result = []
    for line in (line for line in out.splitlines() if line.strip()):
        names: list[str] = []
        current: list[str] | None = None
        for token in line.split(" "):
            if token.startswith("<START:"):
                current = []
            elif token == "<END>" and current is not None:
                if " ".join(current) not in names:
                    names.append(" ".join(current))
                current = None
            elif current is not None:
                current.append(token)
        result.append(names)
    assert len(result) == len(tokens)
    return result


def our_names(models: Models, fields: list[str]) -> list[Document]:
    stage = {"class": "ApplyOpenNLPNameFinders", "textField": "text", "tokenizerPath": str(models.tokenizer),
             "models": {f: str(models.finders[f]) for f in fields}}
    p = Pipeline.from_config([stage])
    try:
        return [p.process(Document(f"d{i}", {"text": text}))[0] for i, text in enumerate(models.heldout)]
    finally:
        p.close()


@pytest.mark.parametrize("field", ["PERSON", "LOCATION", "CUSTOM"])
def test_each_model_finds_what_java_finds(models: Models, field: str) -> None:
    tokens = java_tokens(models)
    expected = java_names(models, tokens, models.finders[field])
    docs = our_names(models, [field])
    found = 0
    for text, doc, names in zip(models.heldout, docs, expected):
        assert doc.get_list(field) == names, (text, names)
        found += len(names)
    assert found > 40, "the models should find names in most sentences"


def test_java_tokens_are_the_tokens_names_are_made_of(models: Models) -> None:
    # Held-out punctuation is attached ("Paris," "(near"): a name is only equal to Java's if it
    # was cut from the same tokens.
    tokens = java_tokens(models)
    assert any("," in text or "(" in text for text in models.heldout)
    flat = {t for line in tokens for t in line}
    assert "." in flat and "," in flat, "Java split punctuation off"
    docs = our_names(models, ["PERSON", "LOCATION"])
    for doc in docs:
        for name in doc.get_list("PERSON") + doc.get_list("LOCATION"):
            assert "," not in name and not name.endswith("."), name


def test_two_models_in_one_run(models: Models, tmp_path: pathlib.Path) -> None:
    tokens = java_tokens(models)
    people = java_names(models, tokens, models.finders["PERSON"])
    places = java_names(models, tokens, models.finders["LOCATION"])
    data = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(models.heldout)]
    lines.append(json.dumps({"id": "no-text", "title": "x"}))
    data.write_text("\n".join(lines) + "\n")
    config = {
        "connectors": [{"name": "docs", "class": "FileConnector", "pipeline": "p", "paths": [str(data)],
                        "fileHandlers": {"json": {}}}],
        "pipelines": [{"name": "p", "stages": [{
            "class": "com.kmwllc.lucille.stage.ApplyOpenNLPNameFinders", "textField": "text",
            "tokenizerPath": str(models.tokenizer),
            "models": {"PERSON": str(models.finders["PERSON"]), "LOCATION": str(models.finders["LOCATION"])},
        }]}],
        "worker": {"threads": 2},
    }
    result = lucille.run(config=config, mode="test")
    # A document without the text field fails, as in Lucille.
    assert result.failed == 1 and result.succeeded == len(models.heldout)
    # Java's TokenNameFinder with both models at once (it drops a name overlapping another).
    both = java_names(models, tokens, models.finders["PERSON"], models.finders["LOCATION"])
    by_id = {d.id: d for d in result.documents}
    for i in range(len(models.heldout)):
        doc = by_id[f"d{i}"]
        assert doc.get_list("PERSON") == people[i]
        assert doc.get_list("LOCATION") == places[i]
        assert set(both[i]) <= set(people[i] + places[i]), (both[i], people[i], places[i])
    assert sum(map(len, both)) > 0.9 * sum(len(p) + len(q) for p, q in zip(people, places))


def test_bad_models_are_config_errors_at_their_keys(models: Models, tmp_path: pathlib.Path) -> None:
    not_a_model = tmp_path / "notes.txt"
    not_a_model.write_text("not a model")
    config = {
        "connectors": [{"name": "s", "class": "SequenceConnector", "pipeline": "p", "numDocs": 1}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "ApplyOpenNLPNameFinders", "textField": "text", "tokenizerPath": str(models.tokenizer),
             "models": {"PERSON": str(tmp_path / "no" / "en-ner-person.bin"), "ORG": True,
                        "LOCATION": str(models.tokenizer), "MISC": str(not_a_model)}},
            {"class": "ApplyOpenNLPNameFinders", "textField": "text", "tokenizerPath": str(models.finders["PERSON"]),
             "models": {}},
        ]}],
    }
    errors = lucille.validate(config=config)
    text = "\n".join(errors)
    for path, message in [
        ("stages[0].models.PERSON", "check the path"),
        ("stages[0].models.ORG", "must be the path of a name finder model file"),
        ("stages[0].models.LOCATION", "TokenizerME"),
        ("stages[0].models.MISC", "not an OpenNLP model"),
        ("stages[1].tokenizerPath", "cannot load tokenizer model"),
    ]:
        assert any(path in e and message in e for e in errors), (path, message, text)
    # The same through `lucille validate` (a JSON config is HOCON).
    conf = tmp_path / "bad.conf"
    conf.write_text(json.dumps(config))
    cli = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)], capture_output=True,
                         text=True, check=False)
    out = cli.stdout + cli.stderr
    assert cli.returncode == 1, out
    assert "stages[0].models.PERSON" in out and "stages[0].models.ORG" in out, out


def test_missing_model_files_fail_pipeline_construction(models: Models, tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match=r"models\.PERSON"):
        lucille.stages.ApplyOpenNLPNameFinders(textField="text", tokenizerPath=str(models.tokenizer),
                                               models={"PERSON": str(tmp_path / "none.bin")})
