//! The name finder's feature generators and the descriptor that configures them
//! (`generator.featuregen` in the model; OpenNLP's `ner-default-features.xml` when the model has
//! none). Both descriptor formats are read: the current one (`<featureGenerators>` of
//! `<generator class="...Factory">` with `<int>` / `<bool>` / `<str>` arguments) and the classic
//! one (`<generators>`, `<cache>`, `<window prevLength=..>`, `<tokenclass/>` ...). Generators
//! that need resources (dictionaries, word clusters, POS models) or custom Java classes are
//! reported as unsupported.
//!
//! Every generator here computes a token's features from the tokens alone, except the
//! previous-map generator, which also reads the adaptive data (the outcome each token had the
//! last time the finder saw it); CachedFeatureGenerator's cache changes nothing but speed, so
//! it is not kept as a generator: the name finder computes each token's features once per
//! sentence.

use std::collections::HashMap;

use unicode_general_category::GeneralCategory;
use unicode_script::{Script, UnicodeScript};

use crate::error::{OpenNlpError, Result};
use crate::java::{category, parse_boolean, parse_int, to_lower_case, utf16};
use crate::xml::Element;

/// OpenNLP 2.1's `ner-default-features.xml`, used when a model carries no descriptor.
pub(crate) const DEFAULT_DESCRIPTOR: &str = r#"<featureGenerators cache="true" name="nameFinder">
  <generator class="opennlp.tools.util.featuregen.WindowFeatureGeneratorFactory">
    <int name="prevLength">2</int>
    <int name="nextLength">2</int>
    <generator class="opennlp.tools.util.featuregen.TokenClassFeatureGeneratorFactory"/>
  </generator>
  <generator class="opennlp.tools.util.featuregen.WindowFeatureGeneratorFactory">
    <int name="prevLength">2</int>
    <int name="nextLength">2</int>
    <generator class="opennlp.tools.util.featuregen.TokenFeatureGeneratorFactory">
      <bool name="lowercase">true</bool>
    </generator>
  </generator>
  <generator class="opennlp.tools.util.featuregen.DefinitionFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.PreviousMapFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.BigramNameFeatureGeneratorFactory"/>
  <generator class="opennlp.tools.util.featuregen.SentenceFeatureGeneratorFactory">
    <bool name="begin">true</bool>
    <bool name="end">false</bool>
  </generator>
</featureGenerators>"#;

/// One feature generator.
#[derive(Debug, Clone)]
pub(crate) enum FeatureGenerator {
    /// The features of the tokens around, prefixed `p1`.. / `n1`..
    Window {
        inner: Box<FeatureGenerator>,
        prev: usize,
        next: usize,
    },
    /// `w=` the token (lower-cased or not).
    Token { lowercase: bool },
    /// `wc=` the token's class, and `w&c=` the lower-cased token with it.
    TokenClass { word_and_class: bool },
    /// `def`: one feature every token has.
    Definition,
    /// `pd=` the token's outcome the last time it was seen (adaptive data).
    PreviousMap,
    /// The previous / next token and class pairs.
    Bigram,
    /// `S=begin` / `S=end` at the sentence's edges.
    Sentence { begin: bool, end: bool },
    /// `pre=` the first 1..n UTF-16 units.
    Prefix(usize),
    /// `suf=` the last 1..n UTF-16 units.
    Suffix(usize),
    /// Several generators, in order.
    Aggregated(Vec<FeatureGenerator>),
}

impl FeatureGenerator {
    /// The features of `tokens[index]`, appended to `out`.
    pub(crate) fn create(
        &self,
        out: &mut Vec<String>,
        tokens: &[String],
        index: usize,
        previous: &HashMap<String, String>,
    ) {
        match self {
            FeatureGenerator::Window { inner, prev, next } => {
                inner.create(out, tokens, index, previous);
                let mut scratch = Vec::new();
                for i in 1..=*prev {
                    if index >= i {
                        scratch.clear();
                        inner.create(&mut scratch, tokens, index - i, previous);
                        out.extend(scratch.iter().map(|f| format!("p{i}{f}")));
                    }
                }
                for i in 1..=*next {
                    if index + i < tokens.len() {
                        scratch.clear();
                        inner.create(&mut scratch, tokens, index + i, previous);
                        out.extend(scratch.iter().map(|f| format!("n{i}{f}")));
                    }
                }
            }
            FeatureGenerator::Token { lowercase } => {
                if *lowercase {
                    out.push(format!("w={}", to_lower_case(&tokens[index])));
                } else {
                    out.push(format!("w={}", tokens[index]));
                }
            }
            FeatureGenerator::TokenClass { word_and_class } => {
                let class = token_feature(&tokens[index]);
                out.push(format!("wc={class}"));
                if *word_and_class {
                    out.push(format!("w&c={},{class}", to_lower_case(&tokens[index])));
                }
            }
            FeatureGenerator::Definition => out.push("def".to_string()),
            FeatureGenerator::PreviousMap => {
                // Java concatenates a missing value as "null".
                let seen = previous.get(&tokens[index]).map_or("null", String::as_str);
                out.push(format!("pd={seen}"));
            }
            FeatureGenerator::Bigram => {
                let wc = token_feature(&tokens[index]);
                if index > 0 {
                    out.push(format!("pw,w={},{}", tokens[index - 1], tokens[index]));
                    out.push(format!("pwc,wc={},{wc}", token_feature(&tokens[index - 1])));
                }
                if index + 1 < tokens.len() {
                    out.push(format!("w,nw={},{}", tokens[index], tokens[index + 1]));
                    out.push(format!("wc,nc={wc},{}", token_feature(&tokens[index + 1])));
                }
            }
            FeatureGenerator::Sentence { begin, end } => {
                if *begin && index == 0 {
                    out.push("S=begin".to_string());
                }
                if *end && tokens.len() == index + 1 {
                    out.push("S=end".to_string());
                }
            }
            FeatureGenerator::Prefix(n) => {
                let units = utf16(&tokens[index]);
                for li in 0..(*n).min(units.len()) {
                    out.push(format!(
                        "pre={}",
                        String::from_utf16_lossy(&units[..li + 1])
                    ));
                }
            }
            FeatureGenerator::Suffix(n) => {
                let units = utf16(&tokens[index]);
                for li in 0..(*n).min(units.len()) {
                    out.push(format!(
                        "suf={}",
                        String::from_utf16_lossy(&units[units.len() - li - 1..])
                    ));
                }
            }
            FeatureGenerator::Aggregated(all) => {
                for g in all {
                    g.create(out, tokens, index, previous);
                }
            }
        }
    }

    /// Parses a descriptor.
    pub(crate) fn from_descriptor(bytes: &[u8]) -> Result<Self> {
        let root = crate::xml::parse(bytes).map_err(|e| OpenNlpError::Descriptor(e.to_string()))?;
        create_generator(&root)
    }
}

fn bad(msg: impl Into<String>) -> OpenNlpError {
    OpenNlpError::Descriptor(msg.into())
}

/// GeneratorFactory.createGenerator: the root, or a classic-format element.
fn create_generator(el: &Element) -> Result<FeatureGenerator> {
    if el.name == "featureGenerators" {
        let mut generators = Vec::new();
        for child in el.elements() {
            if child.name != "generator" {
                return Err(bad(format!(
                    "unexpected element <{}> in <featureGenerators>",
                    child.name
                )));
            }
            generators.push(build_generator(child)?);
        }
        // A `cache="true"` root only caches; see the module comment.
        return match generators.len() {
            0 => Err(bad("featureGenerators must have one or more generators")),
            1 => Ok(generators.remove(0)),
            _ => Ok(FeatureGenerator::Aggregated(generators)),
        };
    }
    classic(el)
}

/// The classic format's elements.
fn classic(el: &Element) -> Result<FeatureGenerator> {
    let int_attr = |name: &str, default: Option<usize>| -> Result<usize> {
        match (el.attribute(name), default) {
            ("", Some(d)) => Ok(d),
            (v, _) => parse_int(v)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    bad(format!(
                        "<{}> attribute {name}=\"{v}\" is not a number",
                        el.name
                    ))
                }),
        }
    };
    let bool_attr = |name: &str| match el.attribute(name) {
        "" => true,
        v => parse_boolean(v),
    };
    let first_child = || {
        el.elements()
            .next()
            .ok_or_else(|| bad(format!("<{}> must contain a generator", el.name)))
    };
    Ok(match el.name.as_str() {
        "generators" => {
            FeatureGenerator::Aggregated(el.elements().map(classic).collect::<Result<_>>()?)
        }
        "cache" => classic(first_child()?)?,
        "window" => FeatureGenerator::Window {
            inner: Box::new(classic(first_child()?)?),
            prev: int_attr("prevLength", None)?,
            next: int_attr("nextLength", None)?,
        },
        "token" => FeatureGenerator::Token { lowercase: true },
        "tokenclass" => FeatureGenerator::TokenClass {
            word_and_class: bool_attr("wordAndClass"),
        },
        "definition" => FeatureGenerator::Definition,
        "prevmap" => FeatureGenerator::PreviousMap,
        "bigram" => FeatureGenerator::Bigram,
        "sentence" => FeatureGenerator::Sentence {
            begin: bool_attr("begin"),
            end: bool_attr("end"),
        },
        "prefix" => FeatureGenerator::Prefix(int_attr("length", Some(4))?),
        "suffix" => FeatureGenerator::Suffix(int_attr("length", Some(4))?),
        other => return Err(OpenNlpError::UnsupportedFeatureGenerator(other.to_string())),
    })
}

/// An argument of a `<generator class=...>` element.
enum Arg {
    Int(i32),
    Bool(bool),
    Other,
}

/// GeneratorFactory.buildGenerator: a `<generator class="...Factory">` and its arguments.
fn build_generator(el: &Element) -> Result<FeatureGenerator> {
    let class = el.attribute("class");
    let mut args: HashMap<String, Arg> = HashMap::new();
    let mut generators = Vec::new();
    for child in el.elements() {
        if child.name == "generator" {
            generators.push(build_generator(child)?);
            continue;
        }
        let name = child.attribute("name").to_string();
        let text = child.text();
        let arg = match child.name.as_str() {
            "int" => Arg::Int(parse_int(&text).ok_or_else(|| bad(format!("<int name=\"{name}\"> {text:?} is not a number")))?),
            "bool" => Arg::Bool(parse_boolean(&text)),
            "long" | "float" | "double" | "str" => Arg::Other,
            other => return Err(bad(format!("child element <{other}> must be one of generator, int, long, float, double, str or bool"))),
        };
        args.insert(name, arg);
    }
    let get_int = |name: &str, default: Option<usize>| -> Result<usize> {
        match (args.get(name), default) {
            (Some(Arg::Int(n)), _) => usize::try_from(*n)
                .map_err(|_| bad(format!("parameter {name} must not be negative"))),
            (Some(_), _) => Err(bad(format!("parameter {name} must be an int"))),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(bad(format!("parameter {name} must be set"))),
        }
    };
    let get_bool = |name: &str, default: bool| -> Result<bool> {
        match args.get(name) {
            Some(Arg::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(format!("parameter {name} must be a bool"))),
            None => Ok(default),
        }
    };
    // generator#0: the nested generator, or all of them aggregated.
    let nested = |mut generators: Vec<FeatureGenerator>| -> Result<FeatureGenerator> {
        match generators.len() {
            0 => Err(bad(format!("{class} must contain a generator"))),
            1 => Ok(generators.remove(0)),
            _ => Ok(FeatureGenerator::Aggregated(generators)),
        }
    };
    let short = class
        .strip_prefix("opennlp.tools.util.featuregen.")
        .unwrap_or(class);
    Ok(match short {
        "WindowFeatureGeneratorFactory" => FeatureGenerator::Window {
            prev: get_int("prevLength", None)?,
            next: get_int("nextLength", None)?,
            inner: Box::new(nested(generators)?),
        },
        "AggregatedFeatureGeneratorFactory" => FeatureGenerator::Aggregated(generators),
        "CachedFeatureGeneratorFactory" => nested(generators)?,
        "TokenFeatureGeneratorFactory" => FeatureGenerator::Token {
            lowercase: get_bool("lowercase", true)?,
        },
        "TokenClassFeatureGeneratorFactory" => FeatureGenerator::TokenClass {
            word_and_class: get_bool("wordAndClass", true)?,
        },
        "DefinitionFeatureGeneratorFactory" => FeatureGenerator::Definition,
        "PreviousMapFeatureGeneratorFactory" => FeatureGenerator::PreviousMap,
        "BigramNameFeatureGeneratorFactory" => FeatureGenerator::Bigram,
        "SentenceFeatureGeneratorFactory" => FeatureGenerator::Sentence {
            begin: get_bool("begin", true)?,
            end: get_bool("end", true)?,
        },
        "PrefixFeatureGeneratorFactory" => FeatureGenerator::Prefix(get_int("length", Some(4))?),
        "SuffixFeatureGeneratorFactory" => FeatureGenerator::Suffix(get_int("length", Some(4))?),
        _ => return Err(OpenNlpError::UnsupportedFeatureGenerator(class.to_string())),
    })
}

const INITIAL_CAPITAL: u32 = 1;
const ALL_CAPITAL: u32 = 1 << 1;
const ALL_LOWER: u32 = 1 << 2;
const ALL_LETTERS: u32 = 1 << 3;
const ALL_DIGIT: u32 = 1 << 4;
const ALL_HIRAGANA: u32 = 1 << 5;
const ALL_KATAKANA: u32 = 1 << 6;
const HAS_PERIOD: u32 = 1 << 7;
const HAS_COMMA: u32 = 1 << 8;
const HAS_SLASH: u32 = 1 << 9;
const HAS_DIGIT: u32 = 1 << 10;
const HAS_HYPHEN: u32 = 1 << 11;
const HAS_LETTERS: u32 = 1 << 12;

/// StringPattern.recognize: the token's shape, per UTF-16 unit (its category) and per code point
/// at that unit (its script).
fn string_pattern(token: &str) -> (u32, usize) {
    let units = utf16(token);
    let mut p = ALL_CAPITAL | ALL_LOWER | ALL_DIGIT | ALL_LETTERS | ALL_HIRAGANA | ALL_KATAKANA;
    let mut digits = 0;
    for (i, &ch) in units.iter().enumerate() {
        let cat = category(ch);
        let is_letter = matches!(
            cat,
            GeneralCategory::UppercaseLetter
                | GeneralCategory::LowercaseLetter
                | GeneralCategory::TitlecaseLetter
                | GeneralCategory::ModifierLetter
                | GeneralCategory::OtherLetter
        );
        if is_letter {
            p |= HAS_LETTERS;
            p &= !ALL_DIGIT;
            if cat == GeneralCategory::UppercaseLetter {
                if i == 0 {
                    p |= INITIAL_CAPITAL;
                }
                p &= !ALL_LOWER;
            } else {
                p &= !ALL_CAPITAL;
            }
        } else {
            p &= !(ALL_LETTERS | ALL_CAPITAL | ALL_LOWER);
            if cat == GeneralCategory::DecimalNumber {
                p |= HAS_DIGIT;
                p &= !(ALL_HIRAGANA | ALL_KATAKANA);
                digits += 1;
            } else {
                p &= !ALL_DIGIT;
            }
            match ch {
                0x2C => p |= HAS_COMMA,
                0x2E => p |= HAS_PERIOD,
                0x2F => p |= HAS_SLASH,
                0x2D => p |= HAS_HYPHEN,
                _ => {}
            }
        }
        // codePointAt(i): a pair read whole at its high unit; a low unit alone is a lone
        // surrogate, whose script is Unknown.
        let code_point = match (ch, units.get(i + 1)) {
            (0xD800..=0xDBFF, Some(&low @ 0xDC00..=0xDFFF)) => {
                0x10000 + ((u32::from(ch) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            _ => u32::from(ch),
        };
        let script = char::from_u32(code_point).map_or(Script::Unknown, |c| c.script());
        match script {
            // The kana middle dot, long vowel mark and wave dash are Common but keep a word kana.
            Script::Common if !matches!(ch, 0x30FB | 0x30FC | 0x301C) => {
                p &= !(ALL_HIRAGANA | ALL_KATAKANA)
            }
            Script::Latin => p &= !(ALL_HIRAGANA | ALL_KATAKANA),
            Script::Han => p &= !(ALL_HIRAGANA | ALL_KATAKANA | ALL_LOWER),
            Script::Hiragana => p &= !(ALL_KATAKANA | ALL_LOWER),
            Script::Katakana => p &= !(ALL_HIRAGANA | ALL_LOWER),
            _ => {}
        }
    }
    (p, digits)
}

/// FeatureGeneratorUtil.tokenFeature: the token's class.
pub(crate) fn token_feature(token: &str) -> &'static str {
    let (p, digits) = string_pattern(token);
    if p & ALL_HIRAGANA != 0 {
        "jah"
    } else if p & ALL_KATAKANA != 0 {
        "jak"
    } else if p & ALL_LOWER != 0 {
        "lc"
    } else if digits == 2 {
        "2d"
    } else if digits == 4 {
        "4d"
    } else if p & HAS_DIGIT != 0 {
        if p & HAS_LETTERS != 0 {
            "an"
        } else if p & HAS_HYPHEN != 0 {
            "dd"
        } else if p & HAS_SLASH != 0 {
            "ds"
        } else if p & HAS_COMMA != 0 {
            "dc"
        } else if p & HAS_PERIOD != 0 {
            "dp"
        } else {
            "num"
        }
    } else if p & ALL_CAPITAL != 0 {
        if utf16(token).len() == 1 {
            "sc"
        } else {
            "ac"
        }
    } else if is_cap_period(token) {
        "cp"
    } else if p & INITIAL_CAPITAL != 0 {
        "ic"
    } else {
        "other"
    }
}

/// `^[A-Z]\.$` found in the token (`$` also before one final line terminator).
fn is_cap_period(token: &str) -> bool {
    let t = token
        .strip_suffix("\r\n")
        .or_else(|| token.strip_suffix(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']))
        .unwrap_or(token);
    let b = t.as_bytes();
    b.len() == 2 && b[0].is_ascii_uppercase() && b[1] == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_classes() {
        for (token, class) in [
            ("john", "lc"),
            ("John", "ic"),
            ("IBM", "ac"),
            ("I", "sc"),
            ("J.", "cp"),
            ("12", "2d"),
            ("1999", "4d"),
            ("A4B", "an"),
            ("1-2-3", "dd"),
            ("1/2/3", "ds"),
            ("1,00", "dc"),
            ("3.14159", "dp"),
            ("123", "num"),
            ("ひらがな", "jah"),
            ("カタカナ", "jak"),
            ("!", "other"),
            // A Greek word keeps the Hiragana flag in OpenNLP (only Common, Latin, Han and the
            // kana scripts clear it).
            ("αβγ", "jah"),
        ] {
            assert_eq!(token_feature(token), class, "{token}");
        }
    }

    #[test]
    fn both_descriptor_formats() {
        let g = FeatureGenerator::from_descriptor(DEFAULT_DESCRIPTOR.as_bytes()).unwrap();
        let classic = br#"<generators><cache><generators>
            <window prevLength="2" nextLength="2"><tokenclass/></window>
            <window prevLength="2" nextLength="2"><token/></window>
            <definition/><prevmap/><bigram/><sentence begin="true" end="false"/>
            </generators></cache></generators>"#;
        let c = FeatureGenerator::from_descriptor(classic).unwrap();
        let tokens: Vec<String> = ["Mr", "Smith", "went", "to", "Paris"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for i in 0..tokens.len() {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            g.create(&mut a, &tokens, i, &HashMap::new());
            c.create(&mut b, &tokens, i, &HashMap::new());
            assert_eq!(a, b);
        }
        let mut f = Vec::new();
        g.create(&mut f, &tokens, 0, &HashMap::new());
        assert_eq!(&f[..4], ["wc=ic", "w&c=mr,ic", "n1wc=ic", "n1w&c=smith,ic"]);
        assert!(f.contains(&"pd=null".to_string()) && f.contains(&"S=begin".to_string()));
        let err = FeatureGenerator::from_descriptor(br#"<featureGenerators><generator class="opennlp.tools.util.featuregen.DictionaryFeatureGeneratorFactory"/></featureGenerators>"#).unwrap_err();
        assert!(
            matches!(err, OpenNlpError::UnsupportedFeatureGenerator(ref c) if c.ends_with("DictionaryFeatureGeneratorFactory"))
        );
        assert!(FeatureGenerator::from_descriptor(b"<featureGenerators><generator").is_err());
    }
}
