//! The name finder's sequence codecs: how outcomes (`person-start`, `person-cont`, `other`, and
//! for BILOU `-last` / `-unit`) become spans, and which outcome may follow which.

use crate::error::{OpenNlpError, Result};

/// OpenNLP's two codecs, chosen by the manifest's `sequenceCodecImplName`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Bio,
    Bilou,
}

/// A name: tokens `start..end`, and its type (from the outcome's prefix).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub kind: Option<String>,
    /// The mean probability of the span's tokens' outcomes.
    pub probability: f64,
}

impl Codec {
    pub(crate) fn from_manifest(name: Option<&str>) -> Result<Self> {
        match name {
            None | Some("opennlp.tools.namefind.BioCodec") => Ok(Codec::Bio),
            Some("opennlp.tools.namefind.BilouCodec") => Ok(Codec::Bilou),
            Some(other) => Err(OpenNlpError::UnsupportedCodec(other.to_string())),
        }
    }

    /// `areOutcomesCompatible`, as the model is checked when it loads.
    pub(crate) fn compatible(&self, outcomes: &[String]) -> bool {
        match self {
            Codec::Bio => {
                let starts: Vec<&str> = outcomes
                    .iter()
                    .filter_map(|o| o.strip_suffix("start"))
                    .collect();
                if starts.is_empty() {
                    return false;
                }
                outcomes.iter().all(|o| {
                    if o.ends_with("start") {
                        true
                    } else if let Some(prefix) = o.strip_suffix("cont") {
                        starts.contains(&prefix)
                    } else {
                        o == "other"
                    }
                })
            }
            Codec::Bilou => {
                // Every type with a start needs cont and last; every cont / last a start.
                let suffixes = ["start", "cont", "last", "unit"];
                let typed = |o: &String| {
                    suffixes
                        .iter()
                        .find_map(|s| o.strip_suffix(s).map(|p| (p.to_string(), *s)))
                };
                let all: Vec<(String, &str)> = outcomes.iter().filter_map(typed).collect();
                if outcomes.iter().any(|o| o != "other" && typed(o).is_none()) {
                    return false;
                }
                let has = |p: &str, s: &str| all.iter().any(|(q, t)| q == p && *t == s);
                all.iter().all(|(p, s)| match *s {
                    "start" => has(p, "cont") || has(p, "last"),
                    "cont" | "last" => has(p, "start"),
                    _ => true,
                })
            }
        }
    }

    /// `decode`: the spans of a sequence of outcomes.
    pub(crate) fn decode(&self, c: &[String]) -> Vec<(usize, usize, Option<String>)> {
        let mut spans = Vec::new();
        let mut start: Option<usize> = None;
        let mut end = 0;
        match self {
            Codec::Bio => {
                for (li, tag) in c.iter().enumerate() {
                    if tag.ends_with("start") {
                        if let Some(s) = start {
                            spans.push((s, end, extract_name_type(&c[li - 1])));
                        }
                        start = Some(li);
                        end = li + 1;
                    } else if tag.ends_with("cont") {
                        end = li + 1;
                    } else if tag.ends_with("other") {
                        if let Some(s) = start.take() {
                            spans.push((s, end, extract_name_type(&c[li - 1])));
                        }
                    }
                }
                if let (Some(s), Some(last)) = (start, c.last()) {
                    spans.push((s, end, extract_name_type(last)));
                }
            }
            Codec::Bilou => {
                for (li, tag) in c.iter().enumerate() {
                    if tag.ends_with("start") {
                        start = Some(li);
                        end = li + 1;
                    } else if tag.ends_with("cont") {
                        end = li + 1;
                    } else if tag.ends_with("last") {
                        if let Some(s) = start.take() {
                            spans.push((s, end + 1, extract_name_type(&c[li - 1])));
                        }
                    } else if tag.ends_with("unit") {
                        spans.push((li, li + 1, extract_name_type(tag)));
                    }
                }
            }
        }
        spans
    }

    /// The sequence validator: may `outcome` follow `previous`?
    pub(crate) fn valid(&self, previous: &[String], outcome: &str) -> bool {
        let last = previous.last();
        match self {
            Codec::Bio => {
                if outcome.ends_with("cont") {
                    let Some(last) = last else { return false };
                    if last.ends_with("other") {
                        return false;
                    }
                    if last.ends_with("cont") || last.ends_with("start") {
                        return same_type(last, outcome);
                    }
                }
                true
            }
            Codec::Bilou => {
                if outcome.ends_with("cont") || outcome.ends_with("last") {
                    let Some(last) = last else { return false };
                    if last.ends_with("other") || last.ends_with("unit") {
                        return false;
                    }
                    if last.ends_with("last") {
                        return false;
                    }
                    if (last.ends_with("cont") || last.ends_with("start"))
                        && !same_type(last, outcome)
                    {
                        return false;
                    }
                }
                if let Some(last) = last {
                    if outcome.ends_with("start")
                        || outcome.ends_with("other")
                        || outcome.ends_with("unit")
                    {
                        return !last.ends_with("start") && !last.ends_with("cont");
                    }
                }
                true
            }
        }
    }
}

/// The validators' type check: equal when both have a type and it is the same, or neither has.
fn same_type(previous: &str, outcome: &str) -> bool {
    match (extract_name_type(previous), extract_name_type(outcome)) {
        (None, None) => true,
        (Some(p), Some(n)) => p == n,
        _ => false,
    }
}

/// `(.+)-\w+` matched against the whole outcome: the part before the last `-`, when what
/// follows it is one or more word characters.
pub(crate) fn extract_name_type(outcome: &str) -> Option<String> {
    let (prefix, suffix) = outcome.rsplit_once('-')?;
    let word = !suffix.is_empty()
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let line_break = prefix.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']);
    (word && !prefix.is_empty() && !line_break).then(|| prefix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn bio_decode_and_validate() {
        let c = s(&[
            "person-start",
            "person-cont",
            "other",
            "location-start",
            "person-start",
        ]);
        assert_eq!(
            Codec::Bio.decode(&c),
            vec![
                (0, 2, Some("person".into())),
                (3, 4, Some("location".into())),
                (4, 5, Some("person".into()))
            ]
        );
        assert!(!Codec::Bio.valid(&[], "person-cont"));
        assert!(!Codec::Bio.valid(&s(&["location-start"]), "person-cont"));
        assert!(Codec::Bio.valid(&s(&["person-start"]), "person-cont"));
        assert!(Codec::Bio.compatible(&s(&["person-start", "person-cont", "other"])));
        assert!(!Codec::Bio.compatible(&s(&["T", "F"])));
    }

    #[test]
    fn bilou_decode_and_validate() {
        let c = s(&[
            "person-start",
            "person-cont",
            "person-last",
            "other",
            "location-unit",
        ]);
        assert_eq!(
            Codec::Bilou.decode(&c),
            vec![
                (0, 3, Some("person".into())),
                (4, 5, Some("location".into()))
            ]
        );
        assert!(!Codec::Bilou.valid(&s(&["person-start"]), "other"));
        assert!(!Codec::Bilou.valid(&s(&["person-last"]), "person-cont"));
        assert!(Codec::Bilou.valid(&s(&["person-last"]), "other"));
    }
}
