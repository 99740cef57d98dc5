//! Fuzz-style robustness tests: random bytes, random token soups and mutated
//! corpus files must never make the parser panic (errors are fine), and
//! pathological inputs (deep nesting, long chains, exponential expansion,
//! include bombs) must end in an error rather than a crash.
//!
//! The seed can be changed with HOCON_FUZZ_SEED, the iteration count scaled
//! with HOCON_FUZZ_ITERS (default 1).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use lucille_hocon::{parse_file, parse_str, render_hocon, HoconError, ParseOptions};

/// Corpus folder (mutation seeds), relative to the crate root.
const CORPUS: &str = "tests/hocon/corpus";

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn seed() -> u64 {
    std::env::var("HOCON_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15)
}

fn iters(base: usize) -> usize {
    let scale: usize = std::env::var("HOCON_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    base * scale.max(1)
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS)
}

fn opts() -> ParseOptions {
    let mut env = HashMap::new();
    env.insert("HOME".to_string(), "/home/x".to_string());
    env.insert("a.b".to_string(), "env-ab".to_string());
    ParseOptions::with_env(env)
}

/// Parse `text`, turning a panic into a test failure that shows the input.
/// Successful results are also rendered and re-parsed (render must round-trip).
fn check(text: &str, base: Option<&Path>) {
    let o = opts();
    let r = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(v) = parse_str(text, base, &o) {
            let rendered = render_hocon(&v);
            match parse_str(&rendered, None, &ParseOptions::with_env(HashMap::new())) {
                Ok(back) => assert_eq!(back, v, "render round trip failed:\n{rendered}"),
                Err(e) => panic!("rendered text does not parse: {e}\n{rendered}"),
            }
        }
    }));
    if r.is_err() {
        panic!("parser panicked on input {text:?}");
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(seed());
    for _ in 0..iters(4000) {
        let len = rng.below(120);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                // bias towards ASCII punctuation that matters to HOCON
                if rng.below(3) == 0 {
                    let special = b"{}[]:=,+$?\"#/\\ \n\t.-0123456789aeu";
                    special[rng.below(special.len())]
                } else {
                    (rng.next() & 0xff) as u8
                }
            })
            .collect();
        check(&String::from_utf8_lossy(&bytes), None);
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    "=",
    "+=",
    ",",
    "\n",
    " ",
    "\t",
    "a",
    "b",
    "a.b",
    "\"a.b\"",
    "x",
    "${a}",
    "${?a}",
    "${b}",
    "${?b}",
    "${a.b}",
    "${?c.d}",
    "${",
    "}",
    "$",
    "?",
    "1",
    "-2",
    "3.5",
    "1e3",
    "1.2.3",
    "true",
    "false",
    "null",
    "\"s\"",
    "\"\"",
    "\"\"\"",
    "\"\"\"t\"\"\"",
    "#c\n",
    "//c\n",
    "include",
    "include \"x.conf\"",
    "include required(\"y.conf\")",
    "file(",
    ")",
    "required(",
    "\\",
    "\"\\u12\"",
    "\"\\n\"",
    "foo bar",
    "\u{a0}",
    "\u{feff}",
    "é",
    "/",
    "a..b",
];

#[test]
fn random_token_soup_never_panics() {
    let mut rng = Rng(seed() ^ 0x1234_5678);
    for _ in 0..iters(20000) {
        let n = rng.below(30);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(TOKENS[rng.below(TOKENS.len())]);
        }
        check(&s, None);
    }
}

/// Structured random documents: more likely to get past the parser and
/// exercise merging and resolution.
#[test]
fn random_documents_never_panic() {
    let mut rng = Rng(seed() ^ 0xfeed);
    let keys = ["a", "b", "c", "a.b", "b.c", "c.a", "\"a\""];
    let values = [
        "1",
        "[1]",
        "{x = 1}",
        "${a}",
        "${?a}",
        "${b}",
        "${?c}",
        "${a.b}",
        "${?b.c}",
        "${a} [2]",
        "${?b} {y = 2}",
        "${b}x",
        "null",
        "\"s\" ${?a}",
        "[${?a}, ${b}]",
        "{a = ${a}}",
        "${c} ${c}",
        "[] ${a}",
    ];
    let seps = [" = ", " : ", " += ", " "];
    for _ in 0..iters(6000) {
        let mut s = String::new();
        for _ in 0..rng.below(8) {
            let k = keys[rng.below(keys.len())];
            let sep = seps[rng.below(seps.len())];
            let v = if sep == " " {
                "{ z = ${?a} }"
            } else {
                values[rng.below(values.len())]
            };
            if rng.below(5) == 0 {
                s.push_str(&format!("{k} {{ {k}{sep}{v} }}\n"));
            } else {
                s.push_str(&format!("{k}{sep}{v}\n"));
            }
        }
        check(&s, None);
    }
}

#[test]
fn mutated_corpus_never_panics() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    assert!(!texts.is_empty());
    let mut rng = Rng(seed() ^ 0xabcdef);
    for _ in 0..iters(3000) {
        let base = &texts[rng.below(texts.len())];
        let mut chars: Vec<char> = base.chars().collect();
        for _ in 0..1 + rng.below(4) {
            if chars.is_empty() {
                break;
            }
            let i = rng.below(chars.len());
            match rng.below(4) {
                0 => {
                    chars.remove(i);
                }
                1 => {
                    let c = "{}[]$\"?:=,+.\n #"
                        .chars()
                        .nth(rng.below(15))
                        .unwrap_or(' ');
                    chars.insert(i, c);
                }
                2 => {
                    let j = rng.below(chars.len());
                    chars.swap(i, j);
                }
                _ => {
                    let end = (i + rng.below(10)).min(chars.len());
                    let dup: Vec<char> = chars[i..end].to_vec();
                    for (k, c) in dup.into_iter().enumerate() {
                        chars.insert(i + k, c);
                    }
                }
            }
        }
        let text: String = chars.into_iter().collect();
        check(&text, Some(&dir));
    }
}

// ---------- pathological inputs ----------

fn expect_err(text: &str) -> HoconError {
    match catch_unwind(AssertUnwindSafe(|| parse_str(text, None, &opts()))) {
        Ok(Ok(_)) => panic!("expected an error"),
        Ok(Err(e)) => e,
        Err(_) => panic!("panicked"),
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for text in [
        "a = ".to_string() + &"[".repeat(100_000),
        "a = ".to_string() + &"{b = ".repeat(100_000),
        "a".to_string() + &".a".repeat(100_000) + " = 1",
        "a { ".repeat(80) + &"b.".repeat(80) + "c = 1" + &" }".repeat(80),
        "a = ".to_string() + &"[{b = ".repeat(80) + "1" + &"}]".repeat(80),
    ] {
        let e = expect_err(&text);
        assert!(e.to_string().contains("nested"), "{e}");
    }
    // 99 levels are fine, including a substitution at the bottom
    let text = "a { ".repeat(50) + &"b.".repeat(45) + "c = [[[${?x} [1]]]]" + &" }".repeat(50);
    parse_str(&text, None, &opts()).expect("99 levels");
}

#[test]
fn long_substitution_chain() {
    // A chain within the limit resolves. Each field refers to a later one, so
    // resolving v0 walks the whole chain recursively.
    let mut s = String::new();
    for i in 0..100 {
        s.push_str(&format!("v{i} = {{ x = ${{v{}}} }}\n", i + 1));
    }
    s.push_str("v100 = end\n");
    let v = parse_str(&s, None, &opts()).expect("chain of 100");
    let mut cur = &v["v0"];
    for _ in 0..100 {
        cur = &cur["x"];
    }
    assert_eq!(cur, "end");
    // a very long chain ends in an error, not a stack overflow
    let mut s = String::new();
    for i in 0..5000 {
        s.push_str(&format!("v{i} = ${{v{}}}\n", i + 1));
    }
    s.push_str("v5000 = end\n");
    let e = expect_err(&s);
    assert!(e.to_string().contains("levels"), "{e}");
}

#[test]
fn many_self_references_resolve() {
    let mut s = String::from("l = []\n");
    for i in 0..500 {
        s.push_str(&format!("l += {i}\n"));
    }
    let v = parse_str(&s, None, &opts()).expect("many +=");
    assert_eq!(v["l"].as_array().map(Vec::len), Some(500));
}

#[test]
fn exponential_expansion_is_bounded() {
    let mut s = String::from("a0 = xxxxxxxxxxxxxxxx\n");
    for i in 1..40 {
        s.push_str(&format!("a{i} = ${{a{p}}}${{a{p}}}\n", p = i - 1));
    }
    let e = expect_err(&s);
    assert!(e.to_string().contains("expand"), "{e}");
    let mut s = String::from("l0 = [1, 2]\n");
    for i in 1..40 {
        s.push_str(&format!("l{i} = [${{l{p}}}, ${{l{p}}}]\n", p = i - 1));
    }
    let e = expect_err(&s);
    assert!(e.to_string().contains("expand"), "{e}");
}

#[test]
fn include_bomb_is_bounded() {
    let dir = std::env::temp_dir().join(format!("hocon-bomb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    for i in 0..20 {
        let body = if i == 19 {
            "leaf = 1\n".to_string()
        } else {
            format!("include \"f{n}.conf\"\ninclude \"f{n}.conf\"\n", n = i + 1)
        };
        std::fs::write(dir.join(format!("f{i}.conf")), body).expect("write");
    }
    let r = parse_file(&dir.join("f0.conf"), &opts());
    let _ = std::fs::remove_dir_all(&dir);
    let e = r.expect_err("bomb");
    assert!(e.to_string().contains("files included"), "{e}");
}
