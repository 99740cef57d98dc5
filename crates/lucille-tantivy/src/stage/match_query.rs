//! MatchQuery: matches each document against a set of stored Lucene-syntax queries and adds
//! the names of those that match to a field (Lucille's stage does this with Lucene's Monitor).
//!
//! Keys (Lucille's): `fields` (the text fields matched against; the first is the default
//! field of queries that name none), `queries` (a list of objects `{ name: "query" }`; a name
//! given again replaces the earlier query), `matchedQueriesField` (gets each matching query's
//! name, added in config order).
//!
//! Queries are parsed with Tantivy's query grammar when the config is validated (a query that
//! does not parse is a config error naming it) and evaluated on the document directly, which
//! is what Lucene's Monitor does with its one-document in-memory index: words, `"phrases"`
//! (with `~slop`), wildcards (`jump*`, `gr?y`), `AND` / `OR` / `NOT`, `+` / `-`, groups, `field:[a TO b]` ranges
//! over terms, `field: IN [a b]`, `*`. Text is tokenized as Tantivy's default analyzer does (on
//! non-alphanumeric characters, lower-cased), close to Lucene's StandardAnalyzer for words. As
//! in Lucille, a field contributes its first value, and a query made only of exclusions
//! matches nothing. A field a query names that is not in `fields` matches nothing.

use tantivy::query_grammar::{
    parse_query, Delimiter, Occur, UserInputAst, UserInputBound, UserInputLeaf, UserInputLiteral,
};
use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, TextAnalyzer};

use serde_json::{Map, Value};

use super::field_util::{check_fields, check_writable};
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "MatchQuery",
    spec: MatchQueryOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Matches each document against a set of stored Lucene-syntax queries and adds the names of
/// those that match to a field.
#[derive(Options)]
#[options(base = Spec::stage())]
struct MatchQueryOptions {
    /// The text fields matched against; the first is the default field of queries that name
    /// none.
    fields: Vec<String>,
    /// The queries, as a list of { name: "query" } objects; a name given again replaces the
    /// earlier query.
    queries: Vec<Map<String, Value>>,
    /// The field each matching query's name is added to, in config order.
    matched_queries_field: String,
}

struct MatchQuery {
    fields: Vec<String>,
    queries: Vec<(String, UserInputAst)>,
    dest: String,
    analyzer: TextAnalyzer,
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(LowerCaser)
        .build()
}

/// What is wrong with one of the `queries`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum QueryError {
    /// `text` is the query as given (a non-string value as its JSON).
    #[error("query {name:?} ({text:?}) does not parse")]
    Unparsable { name: String, text: String },
    #[error("needs at least one query")]
    NoQuery,
}

/// Every problem of the `queries` list, in config order (shown joined by "; ").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join(.0))]
struct QueryErrors(Vec<QueryError>);

fn join(errors: &[QueryError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The queries parsed, in config order (a name given again replaces the earlier query), or
/// what is wrong with them.
fn parse_queries(list: &[Map<String, Value>]) -> Result<Vec<(String, UserInputAst)>, QueryErrors> {
    let mut queries: Vec<(String, UserInputAst)> = Vec::new();
    let mut errors = Vec::new();
    for (name, text) in list.iter().flatten() {
        let text = match text {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match parse_query(&text) {
            Ok(ast) => match queries.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = ast,
                None => queries.push((name.clone(), ast)),
            },
            Err(_) => errors.push(QueryError::Unparsable {
                name: name.clone(),
                text,
            }),
        }
    }
    if queries.is_empty() && errors.is_empty() {
        errors.push(QueryError::NoQuery);
    }
    if errors.is_empty() {
        Ok(queries)
    } else {
        Err(QueryErrors(errors))
    }
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = MatchQueryOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Err(e) = check_fields(config, "fields", &o.fields, false) {
        errors.push(e);
    }
    let dest = o.matched_queries_field;
    if dest.trim().is_empty() {
        errors.push(config.error("matchedQueriesField", "must not be blank"));
    } else if let Err(e) = check_writable(config, "matchedQueriesField", &dest) {
        errors.push(e);
    }
    let queries = parse_queries(&o.queries)
        .map_err(|e| errors.push(config.error("queries", e.to_string())))
        .ok();
    match queries {
        Some(queries) if errors.is_empty() => Ok(Box::new(MatchQuery {
            fields: o.fields,
            queries,
            dest,
            analyzer: analyzer(),
        })),
        _ => Err(ConfigErrors(errors)),
    }
}

/// The document as the queries see it: each configured field's tokens (lower-cased).
struct Tokens<'a> {
    fields: &'a [String],
    tokens: Vec<Option<Vec<String>>>,
}

impl Tokens<'_> {
    fn of(&self, field: Option<&str>) -> Option<&[String]> {
        let name = field.unwrap_or(self.fields[0].as_str());
        let i = self.fields.iter().position(|f| f == name)?;
        self.tokens[i].as_deref()
    }
}

fn tokenize(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push(t.text.clone());
    }
    out
}

/// Glob matching (`*` any run, `?` one character), iterative with one backtrack point.
fn wildcard(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

fn in_bounds(t: &str, lower: &UserInputBound, upper: &UserInputBound) -> bool {
    let above = match lower {
        UserInputBound::Inclusive(l) => t >= l.to_lowercase().as_str(),
        UserInputBound::Exclusive(l) => t > l.to_lowercase().as_str(),
        UserInputBound::Unbounded => true,
    };
    let below = match upper {
        UserInputBound::Inclusive(u) => t <= u.to_lowercase().as_str(),
        UserInputBound::Exclusive(u) => t < u.to_lowercase().as_str(),
        UserInputBound::Unbounded => true,
    };
    above && below
}

impl MatchQuery {
    fn literal(&mut self, doc: &Tokens<'_>, lit: &UserInputLiteral) -> bool {
        let Some(tokens) = doc.of(lit.field_name.as_deref()) else {
            return false;
        };
        // An unquoted word with `*` / `?` is a wildcard over single terms (`jump*`, `gr?y`).
        if lit.delimiter == Delimiter::None && lit.phrase.contains(['*', '?']) {
            let pattern: Vec<char> = lit.phrase.to_lowercase().chars().collect();
            return tokens.iter().any(|t| {
                let t: Vec<char> = t.chars().collect();
                wildcard(&pattern, &t)
            });
        }
        let wanted = tokenize(&mut self.analyzer, &lit.phrase);
        let Some((last, head)) = wanted.split_last() else {
            return false;
        };
        let matches = |t: &String, w: &String, is_last: bool| {
            if is_last && lit.prefix {
                t.starts_with(w.as_str())
            } else {
                t == w
            }
        };
        if head.is_empty() {
            return tokens.iter().any(|t| matches(t, last, true));
        }
        // A phrase: the words in order, at most `slop` extra positions between the first and
        // the last (Lucene's sloppy phrase, for in-order words).
        let slop = lit.slop as usize;
        (0..tokens.len()).any(|start| {
            let mut pos = start;
            for (k, w) in wanted.iter().enumerate() {
                let is_last = k + 1 == wanted.len();
                if k == 0 {
                    if !matches(&tokens[pos], w, is_last) {
                        return false;
                    }
                    continue;
                }
                let limit = (start + k + slop).min(tokens.len().saturating_sub(1));
                match (pos + 1..=limit).find(|&p| matches(&tokens[p], w, is_last)) {
                    Some(p) => pos = p,
                    None => return false,
                }
            }
            true
        })
    }

    fn eval(&mut self, doc: &Tokens<'_>, ast: &UserInputAst) -> bool {
        match ast {
            UserInputAst::Boost(inner, _) => self.eval(doc, inner),
            UserInputAst::Leaf(leaf) => match leaf.as_ref() {
                UserInputLeaf::All => true,
                UserInputLeaf::Literal(lit) => self.literal(doc, lit),
                UserInputLeaf::Range {
                    field,
                    lower,
                    upper,
                } => doc
                    .of(field.as_deref())
                    .is_some_and(|ts| ts.iter().any(|t| in_bounds(t, lower, upper))),
                UserInputLeaf::Set { field, elements } => {
                    let wanted: Vec<String> = elements.iter().map(|e| e.to_lowercase()).collect();
                    doc.of(field.as_deref())
                        .is_some_and(|ts| ts.iter().any(|t| wanted.contains(t)))
                }
                UserInputLeaf::Exists { field } => doc.of(Some(field)).is_some(),
            },
            UserInputAst::Clause(clauses) => {
                let mut any_should = false;
                let mut should_matched = false;
                let mut any_positive = false;
                for (occur, sub) in clauses {
                    match occur.unwrap_or(Occur::Should) {
                        Occur::Must => {
                            any_positive = true;
                            if !self.eval(doc, sub) {
                                return false;
                            }
                        }
                        Occur::MustNot => {
                            if self.eval(doc, sub) {
                                return false;
                            }
                        }
                        Occur::Should => {
                            any_positive = true;
                            any_should = true;
                            should_matched = should_matched || self.eval(doc, sub);
                        }
                    }
                }
                let has_must = clauses.iter().any(|(o, _)| matches!(o, Some(Occur::Must)));
                // Only exclusions: nothing to match (as Lucene). With a MUST, SHOULDs are optional.
                any_positive && (has_must || !any_should || should_matched)
            }
        }
    }
}

impl Stage for MatchQuery {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut tokens = Vec::with_capacity(self.fields.len());
        for field in &self.fields {
            let text = doc.get_string(field)?;
            tokens.push(text.map(|t| tokenize(&mut self.analyzer, &t)));
        }
        let fields = std::mem::take(&mut self.fields);
        let queries = std::mem::take(&mut self.queries);
        let view = Tokens {
            fields: &fields,
            tokens,
        };
        let matched: Vec<String> = queries
            .iter()
            .filter(|(_, ast)| self.eval(&view, ast))
            .map(|(name, _)| name.clone())
            .collect();
        self.fields = fields;
        self.queries = queries;
        for name in matched {
            doc.add_to_field(&self.dest, name)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::{json, Map, Value};

    fn stage() -> Box<dyn crate::stage::Stage> {
        // Lucille's MatchQueryTest/config.conf.
        build_stage(json!({
            "class": "com.kmwllc.lucille.stage.MatchQuery",
            "fields": ["content", "table", "country"],
            "matchedQueriesField": "matchfield",
            "queries": [
                { "query1": "content:test AND content:giraffe" },
                { "query2": "content:test OR content:giraffe" },
                { "japan": "table:geotrans AND (country:japan OR country:jp)" },
                { "not_asia": "table:geotrans AND -(country:KR OR country:'REPUBLIC OF KOREA' OR country:China OR country:cn OR country:'South Korea' OR country:Japan OR country:jp)" }
            ]
        }))
    }

    fn matched(doc: serde_json::Value) -> Vec<String> {
        let d = process(&mut stage(), doc);
        d.get_string_list("matchfield").unwrap_or_default()
    }

    #[test]
    fn lucilles_cases() {
        assert_eq!(
            matched(json!({"id": "d1", "content": "giraffe"})),
            ["query2"]
        );
        assert_eq!(
            matched(json!({"id": "d2", "content": "giraffe test foo"})),
            ["query1", "query2"]
        );
        assert_eq!(
            matched(json!({"id": "d3", "content": "test", "table": "geotrans"})),
            ["query2", "not_asia"]
        );
        assert!(matched(json!({"id": "d4", "content": "foobar"})).is_empty());
        assert_eq!(
            matched(json!({"id": "d5", "table": "geotrans", "country": "japan"})),
            ["japan"]
        );
        // A quoted country excluded by not_asia.
        assert_eq!(
            matched(json!({"id": "d6", "table": "geotrans", "country": "Republic of Korea"})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn phrases_prefixes_defaults_and_exclusions() {
        let mut s = build_stage(json!({
            "class": "MatchQuery", "fields": ["body", "tags"], "matchedQueriesField": "hits",
            "queries": [
                { "phrase": "\"quick brown fox\"" },
                { "sloppy": "\"quick fox\"~1" },
                { "prefix": "body:jump*" },
                { "wild": "body:l?z*" },
                { "default_field": "lazy" },
                { "only_not": "-body:cat" },
                { "tagged": "tags:IN [red blue]" },
                { "same": "body:nothing" },
                { "same": "body:dog" }
            ]
        }));
        let d = process(
            &mut s,
            json!({"id": "a", "body": "The quick brown fox jumps over the lazy dog", "tags": ["blue", "x"]}),
        );
        assert_eq!(
            d.get_string_list("hits").unwrap_or_default(),
            [
                "phrase",
                "sloppy",
                "prefix",
                "wild",
                "default_field",
                "tagged",
                "same"
            ]
        );
        let d = process(&mut s, json!({"id": "b", "body": "fox quick brown"}));
        assert!(d.get_string_list("hits").unwrap_or_default().is_empty());
    }

    #[test]
    fn config_errors() {
        let e = build_err(
            json!({"class": "MatchQuery", "fields": [], "matchedQueriesField": "m",
            "queries": [{"a": "x"}]}),
        );
        assert!(e.contains("fields"), "{e}");
        let e = build_err(
            json!({"class": "MatchQuery", "fields": ["f"], "matchedQueriesField": " ",
            "queries": [{"a": "x"}]}),
        );
        assert!(e.contains("matchedQueriesField"), "{e}");
        let e = build_err(
            json!({"class": "MatchQuery", "fields": ["f"], "matchedQueriesField": "m",
            "queries": []}),
        );
        assert!(e.contains("at least one query"), "{e}");
        let e = build_err(
            json!({"class": "MatchQuery", "fields": ["f"], "matchedQueriesField": "m",
            "queries": [{"bad": "f:("}]}),
        );
        assert!(e.contains("\"bad\"") && e.contains("does not parse"), "{e}");
        // Every query that does not parse is named, in config order.
        let list: Vec<Map<String, Value>> =
            serde_json::from_value(json!([{"a": "f:("}, {"ok": "x"}, {"b": "f:["}])).unwrap();
        assert_eq!(
            super::parse_queries(&list).unwrap_err().to_string(),
            "query \"a\" (\"f:(\") does not parse; query \"b\" (\"f:[\") does not parse"
        );
    }
}
