//! Nested field paths such as `a.b[2].c`.
//!
//! A path is a field name followed by any number of `.name` and `[index]` steps. Parsing is
//! stricter than Lucille's (which silently skips empty steps such as `a..b`): an empty step,
//! whitespace, an unclosed or empty bracket, a non-numeric index, or a path that starts with an
//! index is an error naming the path, because a typo in a config should not quietly address a
//! different field.

use std::fmt;

use super::DocumentError;

/// One step of a nested path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    Field(String),
    Index(usize),
}

/// A parsed nested path; always starts with a [`Segment::Field`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath {
    segments: Vec<Segment>,
}

impl FieldPath {
    pub fn parse(path: &str) -> Result<Self, DocumentError> {
        let invalid = |reason: &str| DocumentError::InvalidPath {
            path: path.to_string(),
            reason: reason.to_string(),
        };
        let mut segments = Vec::new();
        let mut chars = path.char_indices().peekable();
        let mut current = String::new();
        // What may come next: a name (at start or after '.'), or a separator (after a name or ']').
        let mut expect_name = true;
        while let Some((_, ch)) = chars.next() {
            match ch {
                c if c.is_whitespace() => return Err(invalid("whitespace is not allowed")),
                '.' => {
                    if expect_name && current.is_empty() {
                        return Err(invalid("empty field name"));
                    }
                    if !current.is_empty() {
                        segments.push(Segment::Field(std::mem::take(&mut current)));
                    }
                    expect_name = true;
                }
                '[' => {
                    if !current.is_empty() {
                        segments.push(Segment::Field(std::mem::take(&mut current)));
                    } else if expect_name {
                        return Err(invalid(if segments.is_empty() {
                            "a path must start with a field name"
                        } else {
                            "empty field name before '['"
                        }));
                    }
                    let mut digits = String::new();
                    let mut closed = false;
                    for (_, c) in chars.by_ref() {
                        if c == ']' {
                            closed = true;
                            break;
                        }
                        digits.push(c);
                    }
                    if !closed {
                        return Err(invalid("unclosed '['"));
                    }
                    if digits.is_empty() {
                        return Err(invalid("empty index '[]'"));
                    }
                    if !digits.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(invalid("index must be a non-negative integer"));
                    }
                    let index = digits
                        .parse::<usize>()
                        .map_err(|_| invalid("index is too large"))?;
                    segments.push(Segment::Index(index));
                    expect_name = false;
                    match chars.peek() {
                        None | Some((_, '.')) | Some((_, '[')) => {}
                        Some(_) => return Err(invalid("expected '.' or '[' after ']'")),
                    }
                }
                ']' => return Err(invalid("unmatched ']'")),
                c => {
                    if !expect_name && current.is_empty() {
                        return Err(invalid("expected '.' or '[' after ']'"));
                    }
                    expect_name = true;
                    current.push(c);
                }
            }
        }
        if !current.is_empty() {
            segments.push(Segment::Field(current));
        } else if expect_name {
            return Err(invalid(if segments.is_empty() {
                "empty path"
            } else {
                "path ends with '.'"
            }));
        }
        Ok(FieldPath { segments })
    }

    /// Builds a path from segments; the first must be a field name and no name may be empty or
    /// contain a character that the textual form cannot carry.
    pub fn from_segments(segments: Vec<Segment>) -> Result<Self, DocumentError> {
        let text = stringify(&segments);
        match segments.first() {
            Some(Segment::Field(_)) => {}
            _ => {
                return Err(DocumentError::InvalidPath {
                    path: text,
                    reason: "a path must start with a field name".into(),
                })
            }
        }
        for s in &segments {
            if let Segment::Field(name) = s {
                if name.is_empty()
                    || name
                        .chars()
                        .any(|c| c.is_whitespace() || matches!(c, '.' | '[' | ']'))
                {
                    return Err(DocumentError::InvalidPath {
                        path: text,
                        reason: format!("field name {name:?} cannot be part of a path"),
                    });
                }
            }
        }
        Ok(FieldPath { segments })
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The top-level field the path starts at.
    pub fn root(&self) -> &str {
        match self.segments.first() {
            Some(Segment::Field(name)) => name,
            // Construction guarantees a leading field segment.
            _ => "",
        }
    }
}

fn stringify(segments: &[Segment]) -> String {
    let mut out = String::new();
    for (i, s) in segments.iter().enumerate() {
        match s {
            Segment::Field(name) => {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(name);
            }
            Segment::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&stringify(&self.segments))
    }
}

impl std::str::FromStr for FieldPath {
    type Err = DocumentError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldPath::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn f(s: &str) -> Segment {
        Segment::Field(s.to_string())
    }

    #[test]
    fn parses_fields_and_indexes() {
        let p = FieldPath::parse("a.b[2].c").unwrap();
        assert_eq!(p.segments(), &[f("a"), f("b"), Segment::Index(2), f("c")]);
        assert_eq!(p.to_string(), "a.b[2].c");
        assert_eq!(p.root(), "a");
        let p = FieldPath::parse("a[0][1]").unwrap();
        assert_eq!(
            p.segments(),
            &[f("a"), Segment::Index(0), Segment::Index(1)]
        );
        assert_eq!(FieldPath::parse("title").unwrap().segments(), &[f("title")]);
        assert_eq!(
            FieldPath::parse("é.ß").unwrap().segments(),
            &[f("é"), f("ß")]
        );
    }

    #[test]
    fn rejects_invalid_paths_naming_them() {
        for bad in [
            "", ".", "a.", ".a", "a..b", "[0]", "a[", "a[]", "a[x]", "a[-1]", "a]", "a b", "a[0]b",
            "a.[0]", "a[1.5]",
        ] {
            let err = FieldPath::parse(bad).unwrap_err();
            match &err {
                DocumentError::InvalidPath { path, .. } => assert_eq!(path, bad),
                other => panic!("unexpected error {other:?}"),
            }
            assert!(err.to_string().contains("invalid field path"), "{err}");
        }
    }

    #[test]
    fn from_segments_validates() {
        assert!(FieldPath::from_segments(vec![Segment::Index(0)]).is_err());
        assert!(FieldPath::from_segments(vec![f("a.b")]).is_err());
        assert!(FieldPath::from_segments(vec![]).is_err());
        let p = FieldPath::from_segments(vec![f("a"), Segment::Index(3)]).unwrap();
        assert_eq!(p.to_string(), "a[3]");
    }

    fn segment_strategy() -> impl Strategy<Value = Segment> {
        prop_oneof![
            "[a-zA-Z0-9_\\-éü]{1,8}".prop_map(Segment::Field),
            (0usize..100_000).prop_map(Segment::Index),
        ]
    }

    proptest! {
        #[test]
        fn stringify_then_parse_round_trips(
            first in "[a-zA-Z_][a-zA-Z0-9_]{0,8}",
            rest in proptest::collection::vec(segment_strategy(), 0..8)
        ) {
            let mut segments = vec![Segment::Field(first)];
            segments.extend(rest);
            let path = FieldPath::from_segments(segments.clone()).unwrap();
            let text = path.to_string();
            let parsed = FieldPath::parse(&text).unwrap();
            prop_assert_eq!(parsed.segments(), &segments[..]);
            prop_assert_eq!(parsed.to_string(), text);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            if let Ok(p) = FieldPath::parse(&s) {
                // Anything accepted stringifies to something that parses to the same segments.
                let again = FieldPath::parse(&p.to_string()).unwrap();
                prop_assert_eq!(again.segments(), p.segments());
            }
        }
    }
}
