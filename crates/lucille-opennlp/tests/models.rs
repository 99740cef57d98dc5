//! The fixture models (tests/fixtures/make.sh trains them with Apache OpenNLP 2.1's command line
//! tool) run on held-out text: tokens, token probabilities, name spans and their probabilities
//! must be what OpenNLP printed for the same lines (probe-*.txt, written by Probe.java).

use std::io::{Read, Write};
use std::path::PathBuf;

use lucille_opennlp::{AdaptiveData, Codec, ModelType, NameFinder, OpenNlpError, Tokenizer};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
}

/// Each line of heldout.txt against the probe's `T` (tokens and probabilities) and `N` (spans)
/// lines. Returns how many names were compared.
fn check(model: &str, expected_type: ModelType) -> usize {
    check_probe(model, &format!("probe-{model}.txt"), true, expected_type)
}

/// As `check`, against `probe`; `clear`: adaptive data cleared before each line.
fn check_probe(model: &str, probe: &str, clear: bool, expected_type: ModelType) -> usize {
    let tokenizer = Tokenizer::open(fixture("token.bin")).expect("tokenizer loads");
    let finder = NameFinder::open(fixture(&format!("ner-{model}.bin"))).expect("name finder loads");
    assert_eq!(finder.model().model_type(), expected_type);
    let text = std::fs::read_to_string(fixture("heldout.txt")).expect("heldout.txt");
    let probe = std::fs::read_to_string(fixture(probe)).expect("probe file");
    let mut probe = probe.lines();
    // One NameFinderME over all lines, as Probe.java runs (and, with `clear`, clears) it.
    let mut data = AdaptiveData::default();
    let mut names = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let t_line = probe.next().expect("a T line");
        let n_line = probe.next().expect("an N line");
        let expected_tokens: Vec<(&str, f64)> = t_line
            .split('\t')
            .skip(1)
            .map(|f| {
                let (tok, p) = f.rsplit_once(' ').expect("token and probability");
                (tok, p.parse().expect("a probability"))
            })
            .collect();
        let tokens = tokenizer.tokenize_pos(line);
        assert_eq!(tokens.len(), expected_tokens.len(), "{line}");
        for (got, (tok, p)) in tokens.iter().zip(&expected_tokens) {
            assert_eq!(got.text, *tok, "{line}");
            assert!(
                close(got.probability, *p),
                "{line}: {} {} vs {p}",
                got.text,
                got.probability
            );
        }
        let texts: Vec<String> = tokens.into_iter().map(|t| t.text).collect();
        if clear {
            data.clear();
        }
        let spans = finder.find_with(&texts, &mut data);
        let expected: Vec<Vec<&str>> = n_line
            .split('\t')
            .skip(1)
            .map(|s| s.split(' ').collect())
            .collect();
        assert_eq!(
            spans.len(),
            expected.len(),
            "{model}: {line}: {spans:?} vs {n_line}"
        );
        for (span, e) in spans.iter().zip(&expected) {
            assert_eq!(span.start.to_string(), e[0], "{line}");
            assert_eq!(span.end.to_string(), e[1], "{line}");
            assert_eq!(span.kind.as_deref().unwrap_or("null"), e[2], "{line}");
            let p: f64 = e[3].parse().expect("a probability");
            assert!(
                close(span.probability, p),
                "{model}: {line}: {} vs {p}",
                span.probability
            );
            names += 1;
        }
    }
    assert!(
        probe.next().is_none(),
        "the probe has more lines than heldout.txt"
    );
    names
}

#[test]
fn gis_name_finder_matches_opennlp() {
    assert!(check("gis", ModelType::Gis) > 40);
}

#[test]
fn perceptron_name_finder_matches_opennlp() {
    assert!(check("perceptron", ModelType::Perceptron) > 40);
}

#[test]
fn qn_name_finder_matches_opennlp() {
    assert!(check("qn", ModelType::Qn) > 40);
}

#[test]
fn custom_feature_generators_match_opennlp() {
    assert!(check("custom", ModelType::Gis) > 40);
}

#[test]
fn bilou_codec_matches_opennlp() {
    let finder = NameFinder::open(fixture("ner-bilou.bin")).expect("loads");
    assert_eq!(finder.codec(), Codec::Bilou);
    assert!(check("bilou", ModelType::Perceptron) > 40);
}

#[test]
fn adaptive_data_kept_across_sentences_matches_opennlp() {
    // Java's NameFinderME remembering every line's outcomes (as Lucille's does across
    // documents): the previous-map features change the probabilities, and ours follow.
    assert!(check_probe("gis", "probe-gis-adaptive.txt", false, ModelType::Gis) > 40);
    let a = std::fs::read_to_string(fixture("probe-gis-adaptive.txt")).expect("probe");
    let b = std::fs::read_to_string(fixture("probe-gis.txt")).expect("probe");
    assert_ne!(
        a, b,
        "the adaptive data should make a difference on these lines"
    );
}

#[test]
fn first_line_by_hand() {
    // The first held-out line, as OpenNLP printed it (probe-gis.txt).
    let tokenizer = Tokenizer::open(fixture("token.bin")).expect("loads");
    let finder = NameFinder::open(fixture("ner-gis.bin")).expect("loads");
    let tokens = tokenizer.tokenize("Pierre Okafor said the weather in New York was fine.");
    assert_eq!(
        tokens,
        ["Pierre", "Okafor", "said", "the", "weather", "in", "New", "York", "was", "fine", "."]
    );
    let spans = finder.find(&tokens);
    assert_eq!(spans.len(), 2);
    assert_eq!(
        (spans[0].start, spans[0].end, spans[0].kind.as_deref()),
        (0, 2, Some("person"))
    );
    assert_eq!(
        (spans[1].start, spans[1].end, spans[1].kind.as_deref()),
        (6, 8, Some("location"))
    );
    assert!(
        close(spans[0].probability, 0.9456010599971891),
        "{}",
        spans[0].probability
    );
    assert!(
        close(spans[1].probability, 0.9494008735411887),
        "{}",
        spans[1].probability
    );
}

#[test]
fn models_of_the_wrong_component_are_errors() {
    let err = NameFinder::open(fixture("token.bin")).unwrap_err();
    assert!(
        matches!(
            err,
            OpenNlpError::WrongComponent {
                expected: "NameFinderME",
                ..
            }
        ),
        "{err}"
    );
    let err = Tokenizer::open(fixture("ner-gis.bin")).unwrap_err();
    assert!(matches!(err, OpenNlpError::WrongComponent { .. }), "{err}");
    assert!(matches!(
        Tokenizer::open(fixture("absent.bin")),
        Err(OpenNlpError::Io(_))
    ));
}

#[test]
fn truncated_files_are_errors() {
    for name in ["token.bin", "ner-gis.bin", "ner-qn.bin"] {
        let bytes = std::fs::read(fixture(name)).expect("fixture");
        for cut in (0..bytes.len()).step_by(97) {
            let r = if name == "token.bin" {
                Tokenizer::from_bytes(&bytes[..cut]).map(|_| ())
            } else {
                NameFinder::from_bytes(&bytes[..cut]).map(|_| ())
            };
            assert!(r.is_err(), "{name} cut at {cut} loaded");
        }
    }
}

/// The fixture's entries, with `replace` applied, written to a new zip.
fn rewrite(name: &str, replace: impl Fn(&str, Vec<u8>) -> Option<Vec<u8>>) -> Vec<u8> {
    let bytes = std::fs::read(fixture(name)).expect("fixture");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).expect("entry");
        let entry = f.name().to_string();
        let mut data = Vec::new();
        f.read_to_end(&mut data).expect("read");
        if let Some(data) = replace(&entry, data) {
            out.start_file(entry, zip::write::SimpleFileOptions::default())
                .expect("start");
            out.write_all(&data).expect("write");
        }
    }
    out.finish().expect("finish").into_inner()
}

#[test]
fn corrupt_entries_are_errors_not_panics() {
    // A model entry cut anywhere is an error.
    let model = {
        let bytes = std::fs::read(fixture("ner-gis.bin")).expect("fixture");
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
        let mut data = Vec::new();
        zip.by_name("nameFinder.model")
            .expect("entry")
            .read_to_end(&mut data)
            .expect("read");
        data
    };
    for cut in (0..model.len()).step_by(131) {
        let bytes = rewrite("ner-gis.bin", |e, d| {
            Some(if e == "nameFinder.model" {
                model[..cut].to_vec()
            } else {
                d
            })
        });
        assert!(NameFinder::from_bytes(&bytes).is_err(), "cut at {cut}");
    }
    // Flipped bytes load or fail, and never panic.
    for at in (0..model.len()).step_by(53) {
        let mut bad = model.clone();
        bad[at] ^= 0xA5;
        let bytes = rewrite("ner-gis.bin", |e, d| {
            Some(if e == "nameFinder.model" {
                bad.clone()
            } else {
                d
            })
        });
        if let Ok(f) = NameFinder::from_bytes(&bytes) {
            f.find(&["John".to_string(), "Smith".to_string(), "left".to_string()]);
        }
    }
    // Another classifier type is named in the error.
    let bytes = rewrite("ner-gis.bin", |e, d| {
        Some(if e == "nameFinder.model" {
            b"\x00\x0aNaiveBayes\x00\x00\x00\x00".to_vec()
        } else {
            d
        })
    });
    let err = NameFinder::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(err, OpenNlpError::UnsupportedModelType(ref t) if t == "NaiveBayes"),
        "{err}"
    );
    // No manifest, a bad descriptor, an unknown codec.
    let bytes = rewrite("ner-gis.bin", |e, d| {
        (e != "manifest.properties").then_some(d)
    });
    assert!(matches!(
        NameFinder::from_bytes(&bytes),
        Err(OpenNlpError::MissingEntry(_))
    ));
    let bytes = rewrite("ner-gis.bin", |e, d| {
        Some(if e == "generator.featuregen" {
            b"<featureGenerators>".to_vec()
        } else {
            d
        })
    });
    assert!(matches!(
        NameFinder::from_bytes(&bytes),
        Err(OpenNlpError::Descriptor(_))
    ));
    let bytes = rewrite("ner-gis.bin", |e, d| {
        Some(if e == "manifest.properties" {
            String::from_utf8_lossy(&d)
                .replace("opennlp.tools.namefind.BioCodec", "my.Codec")
                .into_bytes()
        } else {
            d
        })
    });
    assert!(
        matches!(NameFinder::from_bytes(&bytes), Err(OpenNlpError::UnsupportedCodec(ref c)) if c == "my.Codec")
    );
}
