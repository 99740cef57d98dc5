//! Unit tests for the HOCON module (one or more per feature and per error).

use super::*;
use serde_json::{json, Value};
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn opts() -> ParseOptions {
    ParseOptions::with_env(env(&[("HOME_T", "/home/t"), ("a.b.env", "dotted")]))
}

fn p(s: &str) -> Value {
    match parse_str(s, None, &opts()) {
        Ok(v) => v,
        Err(e) => panic!("parse failed for {s:?}: {e}"),
    }
}

fn perr(s: &str) -> HoconError {
    match parse_str(s, None, &opts()) {
        Ok(v) => panic!("expected error for {s:?}, got {v}"),
        Err(e) => e,
    }
}

/// Serialized form, so key order is checked too.
fn same(a: &Value, b: &Value) {
    assert_eq!(
        serde_json::to_string(a).unwrap_or_default(),
        serde_json::to_string(b).unwrap_or_default()
    );
}

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("hocon-unit-{}-{}", tag, std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        TempDir(d)
    }
    fn write(&self, name: &str, text: &str) -> std::path::PathBuf {
        let f = self.0.join(name);
        if let Some(parent) = f.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&f, text).expect("write");
        f
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------- syntax ----------

#[test]
fn comments_both_styles() {
    same(
        &p("# c\na = 1 // trailing\n// whole\nb = \"x // not a comment # either\""),
        &json!({"a": 1, "b": "x // not a comment # either"}),
    );
}

#[test]
fn root_braces_optional() {
    same(&p("{ a : 1 }"), &json!({"a": 1}));
    same(&p("a : 1"), &json!({"a": 1}));
    same(&p(""), &json!({}));
    same(&p("  # only a comment\n"), &json!({}));
}

#[test]
fn separators_and_omitted_before_brace() {
    same(
        &p("a = 1\nb : 2\nc { d = 3 }\ne\n{ f = 4 }"),
        &json!({"a": 1, "b": 2, "c": {"d": 3}, "e": {"f": 4}}),
    );
}

#[test]
fn commas_optional_and_trailing() {
    same(&p("a = 1, b = 2,"), &json!({"a": 1, "b": 2}));
    same(&p("a = [1,2,3,]"), &json!({"a": [1, 2, 3]}));
    same(&p("a = [\n1\n2\n3\n]"), &json!({"a": [1, 2, 3]}));
    same(&p("a { x = 1, }"), &json!({"a": {"x": 1}}));
}

#[test]
fn comma_errors() {
    for bad in [
        "a = [1,,2]",
        "a = [,1]",
        "a = [1,2,,]",
        "a = 1,, b = 2",
        "{ , a = 1 }",
    ] {
        assert!(
            matches!(perr(bad), HoconError::Syntax { .. }),
            "{bad} should be a syntax error"
        );
    }
}

#[test]
fn brace_errors() {
    let e = perr("a = 1\n}");
    assert!(
        matches!(
            e,
            HoconError::Syntax {
                line: 2,
                col: 1,
                ..
            }
        ),
        "{e}"
    );
    let e = perr("a { b = 1");
    assert!(matches!(e, HoconError::Syntax { .. }), "{e}");
    let e = perr("{ a = 1 } b = 2");
    assert!(matches!(e, HoconError::Syntax { .. }), "{e}");
    let e = perr("[1, 2]");
    assert!(e.to_string().contains("must be an object"), "{e}");
}

#[test]
fn error_positions() {
    let e = perr("a = 1\nb = \"unterminated\n");
    match e {
        HoconError::Syntax {
            file, line, col, ..
        } => {
            assert_eq!(file, "<string>");
            assert_eq!(line, 2);
            assert_eq!(col, 18);
        }
        other => panic!("{other}"),
    }
    let e = parse_str_named("x = ?", "conf/app.conf", None, &opts()).unwrap_err();
    assert_eq!(e.location(), Some(("conf/app.conf", 1, 5)));
    assert!(e.to_string().starts_with("conf/app.conf:1:5:"), "{e}");
}

#[test]
fn keys_quoted_unquoted_paths() {
    same(
        &p("a.b.c = 1\n\"a.b\".c = 2\n\"q\" = 3\na.\"\".d = 4\nfoo bar = 5"),
        &json!({"a": {"b": {"c": 1}, "": {"d": 4}}, "a.b": {"c": 2}, "q": 3, "foo bar": 5}),
    );
}

#[test]
fn keys_from_numbers_and_keywords() {
    same(
        &p("true = 1\n3 = 2\n3.14 = 3\n10.0foo = 4\nfoo10.0 = 5\nfoo\"10.0\" = 6"),
        &json!({
            "true": 1,
            "3": {"14": 3},
            "10": {"0foo": 4},
            "foo10": {"0": 5},
            "foo10.0": 6
        }),
    );
}

#[test]
fn invalid_paths() {
    for bad in ["a..b = 1", ".a = 1", "a. = 1", "x = ${a..b}", "x = ${.a}"] {
        assert!(matches!(perr(bad), HoconError::Syntax { .. }), "{bad}");
    }
}

#[test]
fn include_word_only_special_at_key_start() {
    same(
        &p("foo include = 1\nbar = include\nl = [ include ]\n\"include\" = 2"),
        &json!({"foo include": 1, "bar": "include", "l": ["include"], "include": 2}),
    );
    assert!(matches!(perr("include = 5"), HoconError::Syntax { .. }));
}

// ---------- strings ----------

#[test]
fn quoted_strings_escapes() {
    same(
        &p(r#"a = "tab\there \"q\" \\ \/ \u00e9 \ud83d\ude00 \b\f\r\n""#),
        &json!({"a": "tab\there \"q\" \\ / \u{e9} \u{1F600} \u{8}\u{c}\r\n"}),
    );
    assert!(matches!(perr(r#"a = "bad \q""#), HoconError::Syntax { .. }));
    assert!(matches!(perr(r#"a = "\u12""#), HoconError::Syntax { .. }));
    assert!(matches!(
        perr("a = \"tab\there\""),
        HoconError::Syntax { .. }
    ));
}

#[test]
fn triple_quoted() {
    same(
        &p("a = \"\"\"line1\n  \"quoted\" \\n no escapes\nend\"\"\"\nb = \"\"\"x\"\"\"\"\""),
        &json!({"a": "line1\n  \"quoted\" \\n no escapes\nend", "b": "x\"\""}),
    );
    assert!(matches!(
        perr("a = \"\"\"never closed"),
        HoconError::Syntax { .. }
    ));
}

#[test]
fn unquoted_strings_and_forbidden_chars() {
    same(
        &p(
            "a = foo/bar.baz-1_x\nb = http//a-comment\nc = truefoo\nd = footrue\ne = 10.0bar\nf = -x",
        ),
        &json!({"a": "foo/bar.baz-1_x", "b": "http", "c": "truefoo", "d": "footrue", "e": "10.0bar", "f": "-x"}),
    );
    // "//" starts a comment even inside an unquoted string
    same(&p("a = x//comment"), &json!({"a": "x"}));
    for bad in [
        "a = b?c", "a = b!c", "a = b@c", "a = b*c", "a = b&c", "a = b^c", "a = b`c", "a = b\\c",
        "a = b+c", "a = $b",
    ] {
        assert!(matches!(perr(bad), HoconError::Syntax { .. }), "{bad}");
    }
    // ':' ends an unquoted value, so an unquoted URL is an error (as in Typesafe)
    assert!(matches!(perr("a = http://x"), HoconError::Syntax { .. }));
}

#[test]
fn value_concatenation_keeps_inner_whitespace() {
    same(
        &p(
            "a =   foo   bar  baz  \nb = \"x\" \"y\"\nc = 1 2\nd = true false null\ne = foo\"bar\"1.50",
        ),
        &json!({"a": "foo   bar  baz", "b": "x y", "c": "1 2", "d": "true false null", "e": "foobar1.50"}),
    );
}

#[test]
fn single_values_keep_type() {
    same(
        &p(
            "a = true\nb = null\nc = 10\nd = -3\ne = 1.5\nf = 1e3\ng = \"10\"\nh = 9223372036854775808\ni = 99999999999999999999",
        ),
        &json!({
            "a": true, "b": null, "c": 10, "d": -3, "e": 1.5, "f": 1000.0, "g": "10",
            "h": 9223372036854775808u64, "i": "99999999999999999999"
        }),
    );
}

#[test]
fn array_and_object_concatenation() {
    same(
        &p("a = [1, 2] [3]\nb = {x: 1} {y: 2} {x: 3}\nc = [[1, 2] [3, 4]]\nd = [[1, 2]\n[3, 4]]"),
        &json!({"a": [1, 2, 3], "b": {"x": 3, "y": 2}, "c": [[1, 2, 3, 4]], "d": [[1, 2], [3, 4]]}),
    );
    same(&p("a = [ 1 2 3 4 ]"), &json!({"a": ["1 2 3 4"]}));
    // Typesafe ignores unquoted text after an array or object (ConfigConcatenation's
    // isIgnoredWhitespace), but not before one
    same(&p("a = [1] foo"), &json!({"a": [1]}));
    assert!(matches!(perr("a = foo [1]"), HoconError::Type { .. }));
    assert!(matches!(perr("a = {x: 1} [1]"), HoconError::Type { .. }));
}

// ---------- merging ----------

#[test]
fn duplicate_keys_merge_and_replace() {
    same(
        &p("foo { a = 42 }\nfoo { b = 43 }"),
        &json!({"foo": {"a": 42, "b": 43}}),
    );
    same(
        &p("foo { a = 42 }\nfoo = null\nfoo { b = 43 }"),
        &json!({"foo": {"b": 43}}),
    );
    same(&p("a = 1\na = 2"), &json!({"a": 2}));
    same(&p("a = {x: 1}\na = 5"), &json!({"a": 5}));
    same(
        &p("a.x = 42, a.y = 43\na { z { q = 1 } }\na.z.r = 2"),
        &json!({"a": {"x": 42, "y": 43, "z": {"q": 1, "r": 2}}}),
    );
}

#[test]
fn key_order_is_first_definition() {
    let v = p("b = 1\na = 2\nb = 3\nc { y = 1, x = 2 }\nc.y = 3");
    let keys: Vec<&String> = v
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["b", "a", "c"]);
    same(&v, &json!({"b": 3, "a": 2, "c": {"y": 3, "x": 2}}));
}

// ---------- substitutions ----------

#[test]
fn simple_substitutions() {
    same(
        &p("a.b = 1\nc = ${a.b}\nd = ${a}\ne = ${c}\nf = ${forward}\nforward = fw"),
        &json!({"a": {"b": 1}, "c": 1, "d": {"b": 1}, "e": 1, "f": "fw", "forward": "fw"}),
    );
}

#[test]
fn substitution_in_concatenation() {
    same(
        &p(
            "host = example.org\nport = 8983\nurl = \"http://\"${host}\":\"${port}/solr\nmsg = ${host} is up\nn = ${nothing}x\nnothing = null",
        ),
        &json!({
            "host": "example.org", "port": 8983,
            "url": "http://example.org:8983/solr",
            "msg": "example.org is up",
            // Typesafe: a null substitution is "null" in a string (resolveNullInString);
            // this asserted "x" before
            "n": "nullx",
            "nothing": null
        }),
    );
}

#[test]
fn substitution_looks_at_latest_value() {
    same(
        &p("bar : { foo : 42, baz : ${bar.foo} }\nbar : { foo : 43 }"),
        &json!({"bar": {"foo": 43, "baz": 43}}),
    );
    same(
        &p("bar : { a : ${foo.d}, b : 1 }\nbar.b = 3\nfoo : { c : ${bar.b}, d : 2 }\nfoo.d = 4"),
        &json!({"bar": {"a": 4, "b": 3}, "foo": {"c": 3, "d": 4}}),
    );
}

#[test]
fn optional_substitution_keeps_earlier_value() {
    same(&p("a = 1\na = ${?UNSET_VAR_X}"), &json!({"a": 1}));
    same(&p("a = ${?UNSET_VAR_X}\nb = 2"), &json!({"b": 2}));
    same(
        &p("a = [1, ${?UNSET_VAR_X}, 2]\nb = x${?UNSET_VAR_X}y\nc = ${?U1}${?U2}"),
        &json!({"a": [1, 2], "b": "xy"}),
    );
    same(
        &p("o { k = default }\no { k = ${?UNSET_VAR_X} }"),
        &json!({"o": {"k": "default"}}),
    );
}

#[test]
fn env_fallback() {
    same(
        &p("a = ${HOME_T}\nb = ${?HOME_T}\nc = ${a.b.env}\nd = ${HOME_T}/x"),
        &json!({"a": "/home/t", "b": "/home/t", "c": "dotted", "d": "/home/t/x"}),
    );
    // a value in the config (even null) hides the environment
    same(
        &p("HOME_T = null\na = ${HOME_T}"),
        &json!({"HOME_T": null, "a": null}),
    );
    same(
        &p("HOME_T = mine\na = ${HOME_T}"),
        &json!({"HOME_T": "mine", "a": "mine"}),
    );
    // empty env var counts as unset
    let o = ParseOptions::with_env(env(&[("EMPTY", "")]));
    let v = parse_str("a = 1\na = ${?EMPTY}", None, &o).expect("parse");
    same(&v, &json!({"a": 1}));
}

#[test]
fn self_referential_substitutions() {
    same(
        &p("path = [a]\npath = ${path} [b]\npath = ${path} [c]"),
        &json!({"path": ["a", "b", "c"]}),
    );
    same(
        &p("path : \"a:b:c\"\npath : ${path}\":d\""),
        &json!({"path": "a:b:c:d"}),
    );
    same(&p("foo { a = 1 }\nfoo = ${foo}"), &json!({"foo": {"a": 1}}));
    same(
        &p("foo : { a : { c : 1 } }\nfoo : ${foo.a}\nfoo : { a : 2 }"),
        &json!({"foo": {"a": 2, "c": 1}}),
    );
    same(&p("a = ${?a}foo"), &json!({"a": "foo"}));
    same(&p("foo : ${?foo}"), &json!({}));
    same(&p("foo : ${does-not-exist}\nfoo : 42"), &json!({"foo": 42}));
    same(
        &p("x { y = [1] }\nx { y = ${x.y} [2] }"),
        &json!({"x": {"y": [1, 2]}}),
    );
}

/// Typesafe's ConfigSubstitutionTest on delayed merges (`item1 = ${defaults}` then
/// `item1.b = …`), compared as resolved values. 3 and 5: `defaults` refers back into
/// `item1` while `item1 = ${defaults}` looks back below itself; Typesafe keeps the
/// looked-back value in `defaults` (its memo is per value, first resolution wins), where we
/// used to give `defaults.a` the final value (3) or report a cycle (5). Embrace:
/// `item2.d = ${item1.a}` must not resolve `item1.c = ${item2.d}` (a cycle error before).
#[test]
fn typesafe_delayed_merge_self_references() {
    let cases = [
        (
            // avoidDelayedMergeObjectResolveProblem1
            "defaults { a = 1, b = 2 }\nitem1 = ${defaults}\nitem1.b = 3\nitem2.b = ${item1.b}",
            json!({"defaults": {"a": 1, "b": 2}, "item1": {"a": 1, "b": 3}, "item2": {"b": 3}}),
        ),
        (
            // avoidDelayedMergeObjectResolveProblem3
            "item1.b.c = 100\ndefaults { a = ${item1.b.c}, b = 2 }\nitem1 = ${defaults}\n\
             item1.b = { c : 43 }\nitem2.b = ${item1.b}",
            json!({"item1": {"b": {"c": 43}, "a": 100}, "defaults": {"a": 100, "b": 2},
                   "item2": {"b": {"c": 43}}}),
        ),
        (
            // avoidDelayedMergeObjectResolveProblem4
            "defaults { a = 1, b = 2 }\nitem1.b = 7\nitem1 = ${defaults}\nitem2.b = ${item1.b}",
            json!({"defaults": {"a": 1, "b": 2}, "item1": {"b": 2, "a": 1}, "item2": {"b": 2}}),
        ),
        (
            // avoidDelayedMergeObjectResolveProblem5
            "defaults { a = ${item1.b}, b = 2 }\nitem1.b = 7\nitem1 = ${defaults}\n\
             item2.b = ${item1.b}",
            json!({"defaults": {"a": 7, "b": 2}, "item1": {"b": 2, "a": 7}, "item2": {"b": 2}}),
        ),
        (
            // resolveDelayedMergeObjectEmbrace
            "defaults { a = 1, b = 2 }\nitem1 = ${defaults}\nitem1.c = ${item2.d}\n\
             item1.x = ${item2.y}\nitem2 = ${defaults}\nitem2.d = ${item1.a}\nitem2.y = 15",
            json!({"defaults": {"a": 1, "b": 2}, "item1": {"a": 1, "b": 2, "c": 1, "x": 15},
                   "item2": {"a": 1, "b": 2, "d": 1, "y": 15}}),
        ),
        (
            // resolvePlainObjectEmbrace
            "item1.a = 10\nitem1.b = ${item2.d}\nitem2.c = 12\nitem2.d = 14\n\
             item2.e = ${item1.a}\nitem2.f = ${item1.b}\nitem2.g = ${item2.f}",
            json!({"item1": {"a": 10, "b": 14},
                   "item2": {"c": 12, "d": 14, "e": 10, "f": 14, "g": 14}}),
        ),
    ];
    for (src, want) in cases {
        same(&p(src), &want);
    }
    // avoidDelayedMergeObjectResolveProblem6 (several layers of delayed merges)
    let v = p(
        "z = 15\nddd { m = ${z}, n.o.p = ${z} }\ndd { x = 10, y = 11, asdf = ${z} }\n\
               defaults { a = 1, b = 2 }\nalias = ${defaults}\nitem1 = 345\n\
               item1 = ${?NONEXISTENT}\nitem1 = ${ddd}\nitem1 = {}\nitem1 = ${dd}\n\
               item1 = ${alias}\nitem1 = ${defaults}\nitem1.b = { c : 43 }\n\
               item1.xyz = 101\nitem2.b = ${item1.b}",
    );
    assert_eq!(v["item1"]["b"], json!({"c": 43}));
    assert_eq!(v["item2"]["b"]["c"], 43);
    assert_eq!(v["item1"]["n"]["o"]["p"], 15);
    assert_eq!(v["item1"]["xyz"], 101);
}

/// `${s.kN}` through the merge stack `s = ${x}`, `s.extra = 1` reads the one field (and
/// resolves the `${x}` layer once), as Typesafe's restricted resolution does; the whole of
/// `s` used to be copied for each lookup, which ran into the copy budget here.
#[test]
fn lookups_through_a_merge_stack_copy_only_the_field() {
    let n = 2000;
    let fields: Vec<String> = (0..n).map(|i| format!("k{i} = {i}")).collect();
    let mut src = format!("x {{ {} }}\ns = ${{x}}\ns.extra = 1\n", fields.join(", "));
    for i in 0..n {
        src.push_str(&format!("r{i} = ${{s.k{i}}}\n"));
    }
    let v = p(&src);
    assert_eq!(v["r0"], 0);
    assert_eq!(v["r1999"], 1999);
    assert_eq!(v["s"]["extra"], 1);
    assert_eq!(v["s"]["k5"], 5);
}

#[test]
fn object_inheritance_via_concat() {
    same(
        &p("generic = { size = 6, name = g }\neast = ${generic} { name = east }"),
        &json!({"generic": {"size": 6, "name": "g"}, "east": {"size": 6, "name": "east"}}),
    );
}

#[test]
fn plus_equals() {
    same(&p("a += 1\na += 2"), &json!({"a": [1, 2]}));
    same(
        &p("a = [0]\na += 1\na += {x: 1}"),
        &json!({"a": [0, 1, {"x": 1}]}),
    );
    same(
        &p("o { l = [x] }\no { l += y }"),
        &json!({"o": {"l": ["x", "y"]}}),
    );
    same(&p("o.l += y"), &json!({"o": {"l": ["y"]}}));
    assert!(matches!(perr("a = 1\na += 2"), HoconError::Type { .. }));
}

#[test]
fn unresolved_substitution_error() {
    let e = perr("a = 1\nb = ${missing.path}");
    match e {
        HoconError::UnresolvedSubstitution {
            path, line, col, ..
        } => {
            assert_eq!(path, "missing.path");
            assert_eq!((line, col), (2, 5));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn cycle_errors() {
    for (src, line) in [
        ("bar : ${foo}\nfoo : ${bar}", 0),
        ("a : ${b}\nb : ${c}\nc : ${a}", 0),
        ("a : { b : ${a} }", 1),
        ("a : [${a}]", 1),
        ("foo : ${foo}", 1),
    ] {
        let e = perr(src);
        match &e {
            HoconError::Cycle { line: l, chain, .. } => {
                assert!(!chain.is_empty());
                if line > 0 {
                    assert_eq!(*l, line, "{src}");
                }
            }
            other => panic!("{src}: expected cycle, got {other}"),
        }
        assert!(e.to_string().contains("cycle"), "{e}");
    }
    // optional self-cycles are just undefined
    same(&p("a : ${?b}\nb : ${?a}"), &json!({}));
}

#[test]
fn concat_type_errors() {
    same(
        &p("o = {a: 1}\nx = ${o} foo"),
        &json!({"o": {"a": 1}, "x": {"a": 1}}),
    );
    assert!(matches!(
        perr("o = {a: 1}\nx = ${o} \"foo\""),
        HoconError::Type { .. }
    ));
    assert!(matches!(
        perr("l = [1]\nx = ${l} ${l} \" \" ${l}"),
        HoconError::Type { .. }
    ));
    same(
        &p("l = [1]\nx = ${l} ${l}"),
        &json!({"l": [1], "x": [1, 1]}),
    );
}

#[test]
fn nested_substitution_rejected() {
    assert!(matches!(perr("a = ${b${c}}"), HoconError::Syntax { .. }));
    assert!(matches!(perr("${a} = 1"), HoconError::Syntax { .. }));
}

// ---------- includes ----------

#[test]
fn includes() {
    let d = TempDir::new("inc");
    d.write("base.conf", "x = 10\ny = ${x}\nlist = [1]\n");
    d.write("sub/inner.conf", "deep = true\ninclude \"sibling.conf\"\n");
    d.write("sub/sibling.conf", "sib = 1\n");
    d.write("extless.conf", "e = conf\n");
    d.write("extless.json", "{\"e\": \"json\", \"j\": 1}");
    d.write("p.properties", "p.q = 1\np.r=two\n");
    let main = d.write(
        "main.conf",
        "include \"base.conf\"\n\
         a { include file(\"base.conf\") }\n\
         a { x = 42 }\n\
         b { include required(\"sub/inner.conf\") }\n\
         include \"missing.conf\"\n\
         include \"extless\"\n\
         include \"p.properties\"\n\
         list += 2\n",
    );
    let v = parse_file(&main, &opts()).expect("parse");
    same(
        &v,
        &json!({
            "x": 10, "y": 10, "list": [1, 2],
            "a": {"x": 42, "y": 42, "list": [1]},
            "b": {"deep": true, "sib": 1},
            "e": "conf", "j": 1,
            "p": {"q": "1", "r": "two"}
        }),
    );
}

#[test]
fn include_errors() {
    let d = TempDir::new("incerr");
    d.write("loop1.conf", "include \"loop2.conf\"\n");
    d.write("loop2.conf", "include \"loop1.conf\"\n");
    d.write("arr.conf", "[1, 2]");
    d.write("bad.conf", "a = {");
    let cases = [
        (
            "include required(\"nope.conf\")",
            "required include not found",
        ),
        (
            "include required(file(\"nope.conf\"))",
            "required include not found",
        ),
        ("include \"loop1.conf\"", "include cycle"),
        (
            "include url(\"http://example.com/x.conf\")",
            "not supported",
        ),
        ("include classpath(\"x.conf\")", "not supported"),
        ("include \"arr.conf\"", "must be an object"),
        ("include \"bad.conf\"", "end of input"),
        ("include nope", "include must be followed"),
        ("include file(nope)", "quoted string"),
        ("include required(\"x.conf\"", "expected ')'"),
    ];
    for (src, needle) in cases {
        let f = d.write("case.conf", src);
        let e = parse_file(&f, &opts()).expect_err(src);
        assert!(e.to_string().contains(needle), "{src}: {e}");
        assert!(e.location().is_some(), "{src}: {e}");
    }
    let e = parse_str("include \"rel.conf\"", None, &opts()).expect_err("no base");
    assert!(matches!(e, HoconError::Include { .. }), "{e}");
    let e = parse_file(&d.0.join("absent.conf"), &opts()).expect_err("missing");
    assert!(matches!(e, HoconError::Io { .. }), "{e}");
}

/// `include url("file:…")` reads the local file, as Typesafe Config does (ConfParserTest
/// includeURLWithExtension / includeURLBasename / includeURLInvalid, PublicApiTest's
/// `url("file:/nonexistent")`); before, every url() include was an error.
#[test]
fn include_url_file() {
    let d = TempDir::new("url");
    d.write(
        "t01.conf",
        "ints.fortyTwo = 42\nnested { include \"sub.conf\" }",
    );
    d.write("sub.conf", "deep = true");
    d.write("t01.json", "{ \"fromJson1\": 1 }");
    d.write("my dir/sp.conf", "spaced = yes");
    let abs = d.0.display().to_string();
    let with_base = |src: &str| match parse_str(src, Some(&d.0), &opts()) {
        Ok(v) => v,
        Err(e) => panic!("{src}: {e}"),
    };
    // an absolute file: URL, in its three spellings; no base folder needed
    for url in [
        format!("file:{abs}/t01.conf"),
        format!("file://{abs}/t01.conf"),
        format!("file://localhost{abs}/t01.conf"),
    ] {
        let src = format!("include url(\"{url}\")");
        same(
            &p(&src),
            &json!({"ints": {"fortyTwo": 42}, "nested": {"deep": true}}),
        );
    }
    // exactly the named file: no .conf/.json/.properties guessing for a URL
    same(&p(&format!("include url(\"file:{abs}/t01\")")), &json!({}));
    same(&p("include url(\"file:/nonexistent/x.conf\")"), &json!({}));
    same(
        &p(&format!("include url(\"FILE:{abs}/t01.json?q=1#frag\")")),
        &json!({"fromJson1": 1}),
    );
    same(
        &p(&format!("include url(\"file:{abs}/my%20dir/sp.conf\")")),
        &json!({"spaced": "yes"}),
    );
    // a quoted include that is a URL is a url() include (includeURLHeuristically /
    // includeURLBasenameHeuristically); before, it was a missing relative file
    same(
        &with_base(&format!("include \"file:{abs}/t01.conf\"")),
        &json!({"ints": {"fortyTwo": 42}, "nested": {"deep": true}}),
    );
    same(
        &with_base(&format!("include \"file:{abs}/t01\"")),
        &json!({}),
    );
    let e = perr("include \"http://example.com/a.conf\"");
    assert!(e.to_string().contains("http: URL is not supported"), "{e}");
    // a name whose "scheme" Java does not know is a file name, as in Typesafe
    d.write("c:odd.conf", "odd = 1");
    same(&with_base("include \"c:odd.conf\""), &json!({"odd": 1}));
    // relative: against the including file's folder, like file("t01.conf")
    same(
        &with_base("a { include url(\"file:t01.conf\") }"),
        &with_base("a { include file(\"t01.conf\") }"),
    );
    same(
        &with_base("include required(url(\"file:t01.json\"))"),
        &json!({"fromJson1": 1}),
    );
    let cases = [
        (
            "include required(url(\"file:/nonexistent/x.conf\"))",
            "required include not found",
        ),
        ("include url(\"junk:junk:junk\")", "invalid URL"),
        ("include url(\"t01.conf\")", "invalid URL"),
        (
            "include url(\"https://example.com/a.conf\")",
            "https: URL is not supported",
        ),
        ("include url(\"file:rel.conf\")", "no base directory"),
    ];
    for (src, needle) in cases {
        let e = perr(src);
        assert!(matches!(e, HoconError::Include { .. }), "{src}: {e}");
        assert!(e.to_string().contains(needle), "{src}: {e}");
    }
}

#[test]
fn file_url_errors_say_what_to_write() {
    use crate::parser::{file_url_path, FileUrlError};
    assert_eq!(
        file_url_path("file:/a/b.conf"),
        Ok(Some("/a/b.conf".into()))
    );
    assert_eq!(file_url_path("file://"), Ok(None));
    assert_eq!(file_url_path("t01.conf"), Err(FileUrlError::NoScheme));
    assert_eq!(
        file_url_path("https://example.com/a.conf"),
        Err(FileUrlError::NotAFile("https".into()))
    );
    let e = file_url_path("junk:junk:junk").unwrap_err();
    assert_eq!(e, FileUrlError::UnknownScheme("junk".into()));
    assert_eq!(
        e.to_string(),
        "invalid URL: unknown scheme junk: (write file:/path/to/file.conf, or use \
         file(\"...\") for a path)"
    );
}

/// Typesafe Config rejects `+=` nested in a list (ConcatenationTest
/// plusEqualsMultipleTimesNestedInArray / ...NestedInPlusEquals: "limitation") and an
/// include in a list whose file has substitutions, rather than give a wrong result; we
/// gave `x: [{a: [3]}]`.
#[test]
fn plus_equals_and_includes_inside_lists_are_errors() {
    for src in [
        "x = [ { a += 1, a += 2, a += 3 } ]",
        "x += { a += 1, a += 2, a += 3 }",
        "x = [ [ { y { a += 1 } } ] ]",
    ] {
        let e = perr(src);
        assert!(matches!(e, HoconError::Syntax { .. }), "{src}: {e}");
        assert!(e.to_string().contains("inside a list"), "{src}: {e}");
    }
    // outside lists `+=` is fine, also after a list
    same(
        &p("x += { a = 1 }\ny = [ { a = 1 } ]\ny += 2"),
        &json!({"x": [{"a": 1}], "y": [{"a": 1}, 2]}),
    );
    let d = TempDir::new("inclist");
    d.write("plain.conf", "a = 1");
    d.write("subst.conf", "a = 1\nb = ${a}");
    let ok = parse_str("x = [ { include \"plain.conf\" } ]", Some(&d.0), &opts());
    same(
        &ok.expect("plain include in a list"),
        &json!({"x": [{"a": 1}]}),
    );
    let e = parse_str("x = [ { include \"subst.conf\" } ]", Some(&d.0), &opts())
        .expect_err("include with substitutions in a list");
    assert!(matches!(e, HoconError::Include { .. }), "{e}");
    assert!(e.to_string().contains("inside a list"), "{e}");
}

#[test]
fn include_substitutions_are_relativized() {
    let d = TempDir::new("rel");
    d.write(
        "foo.conf",
        "{ x : 10, y : ${x}, h = ${HOME_T}, top = ${toplevel} }",
    );
    let main = d.write(
        "main.conf",
        "toplevel = T\na : { include \"foo.conf\" }\na : { x : 42 }\n",
    );
    let v = parse_file(&main, &opts()).expect("parse");
    same(
        &v,
        &json!({"toplevel": "T", "a": {"x": 42, "y": 42, "h": "/home/t", "top": "T"}}),
    );
}

#[test]
fn invalid_utf8_file() {
    let d = TempDir::new("utf8");
    let f = d.0.join("bad.conf");
    std::fs::write(&f, b"a = 1\nb = \xff\n").expect("write");
    let e = parse_file(&f, &opts()).expect_err("utf8");
    assert!(
        matches!(
            e,
            HoconError::Syntax {
                line: 2,
                col: 5,
                ..
            }
        ),
        "{e}"
    );
}

// ---------- overrides ----------

#[test]
fn overrides() {
    let o = opts()
        .with_override("worker.threads", "4")
        .with_override("list", "[1,2]")
        .with_override("name", "abc")
        .with_override("copy", "${base}")
        .with_override("url", "http://localhost:8983/solr")
        .with_override("\"dotted.key\"", "x")
        .with_override("solr.url", "${?UNSET_OVERRIDE}")
        .with_override("empty", "");
    let v = parse_str(
        "base = B\nworker { threads = 1, other = 2 }\nsolr.url = \"http://default\"",
        None,
        &o,
    )
    .expect("parse");
    same(
        &v,
        &json!({
            "base": "B",
            "worker": {"threads": 4, "other": 2},
            "solr": {"url": "http://default"},
            "list": [1, 2], "name": "abc", "copy": "B",
            "url": "http://localhost:8983/solr", "dotted.key": "x", "empty": ""
        }),
    );
    let e = parse_str("a = 1", None, &opts().with_override("a..b", "1")).expect_err("bad key");
    assert!(matches!(e, HoconError::Override { .. }), "{e}");
    let e = parse_str("a = 1", None, &opts().with_override("x", "${nope}")).expect_err("unres");
    assert!(e.to_string().contains("<override x>"), "{e}");
}

#[test]
fn an_override_with_a_number_indexes_the_list_there() {
    let text = "connectors = [{ name = a, numDocs = 5 }, { name = b }]\nm { 0 = zero }";
    let o = opts()
        .with_override("connectors.0.numDocs", "10")
        .with_override("connectors.1.tags", "[x, y]")
        .with_override("m.0", "changed");
    let v = parse_str(text, None, &o).expect("parse");
    same(
        &v,
        &json!({
            "connectors": [{"name": "a", "numDocs": 10}, {"name": "b", "tags": ["x", "y"]}],
            "m": {"0": "changed"}
        }),
    );
    let e = parse_str(text, None, &opts().with_override("connectors.2.name", "c"))
        .expect_err("past the end");
    assert!(
        e.to_string().contains("past the end of the list (2 items)"),
        "{e}"
    );
}

// ---------- render ----------

#[test]
fn render_round_trip() {
    let src = "a = 1\nb { c = \"x y\", \"d.e\" = [1, 2, {f = null}], \"include\" = true }\n\
               s = \"\"\"multi\nline\"\"\"\nq = \"has \\\"quotes\\\"\"\nempty {}\nl = []\n\
               n = 1.5\nt = \"true\"\nnum = \"10\"\nlong = [\"aaaaaaaaaaaaaaaaaaaa\", \"bbbbbbbbbbbbbbbbbbbbbbbb\", \"cccccccccccccccccccccccccc\"]";
    let v = p(src);
    let text = render_hocon(&v);
    assert!(text.contains("\"d.e\" = "), "{text}");
    assert!(text.contains("\"include\" = true"), "{text}");
    assert!(text.contains("b {\n"), "{text}");
    let back = p(&text);
    same(&back, &v);
    assert_eq!(render_hocon(&json!({})), "{}\n");
}

#[test]
fn lookups_through_delayed_merges() {
    same(
        &p("base { y = 2 }\na = ${base} { x = 1 }\nb = ${a.x}\nc = ${a.y}"),
        &json!({"base": {"y": 2}, "a": {"y": 2, "x": 1}, "b": 1, "c": 2}),
    );
    same(
        &p("d = ${b2}\nd = { y = ${d.z}, z = 1 }\nb2 = { q = 1 }"),
        &json!({"d": {"q": 1, "y": 1, "z": 1}, "b2": {"q": 1}}),
    );
}

#[test]
fn self_reference_inside_merged_object_looks_back() {
    same(
        &p("base { y = 2 }\ne = ${base}\ne { y = ${e.y}0 }"),
        &json!({"base": {"y": 2}, "e": {"y": "20"}}),
    );
    same(
        &p("f { g = [1] }\nf = ${f} { g = ${f.g} [2] }"),
        &json!({"f": {"g": [1, 2]}}),
    );
    same(
        &p("base { y = 2 }\ne = ${base}\ne { y = ${?UNSET_VAR_X} }"),
        &json!({"base": {"y": 2}, "e": {"y": 2}}),
    );
}

#[test]
fn substitution_types_and_forward_values() {
    // a single defined piece keeps its type
    same(
        &p("a = 1\nb = ${a}${?UNSET_VAR_X}"),
        &json!({"a": 1, "b": 1}),
    );
    // substitutions see the final value of a self-referential field
    same(
        &p("a = [1]\na = ${a} [2]\nb = ${a}"),
        &json!({"a": [1, 2], "b": [1, 2]}),
    );
    same(
        &p("a = 1.50\nb = ${a} m"),
        &json!({"a": 1.5, "b": "1.50 m"}),
    );
}

#[test]
fn override_self_reference_and_nesting() {
    let o = opts()
        .with_override("list", "${list} [3]")
        .with_override("o.k", "{ x = 1 }");
    let v = parse_str("list = [1, 2]\no { k { y = 2 } }", None, &o).expect("parse");
    same(
        &v,
        &json!({"list": [1, 2, 3], "o": {"k": {"y": 2, "x": 1}}}),
    );
}

#[test]
fn crlf_and_bom() {
    same(
        &p("\u{feff}a = 1\r\nb = two words\r\nc {\r\n  d = [1,\r\n  2]\r\n}\r\n"),
        &json!({"a": 1, "b": "two words", "c": {"d": [1, 2]}}),
    );
}

#[test]
fn number_edge_cases() {
    same(
        &p("a = 1.\nb = -0\nc = 1_000\nd = 1e\ne = 0x10\nf = 1.2.3\ng = 1e999"),
        &json!({"a": 1.0, "b": 0, "c": "1_000", "d": "1e", "e": "0x10", "f": "1.2.3", "g": "1e999"}),
    );
}

#[test]
fn error_type_is_send_sync_and_io_errors() {
    fn assert_send_sync<T: Send + Sync + std::error::Error>() {}
    assert_send_sync::<HoconError>();
    let d = TempDir::new("io");
    let e = parse_file(&d.0, &opts()).expect_err("directory");
    assert!(matches!(e, HoconError::Io { .. }), "{e}");
    // default options read the process environment
    let o = ParseOptions::default();
    assert!(o.overrides.is_empty());
}

#[test]
fn a_comma_may_start_the_next_line_as_in_typesafe() {
    same(&p("a = [1\n, 2]"), &json!({"a": [1, 2]}));
    same(&p("a = [1\n\n  , 2\n, 3]"), &json!({"a": [1, 2, 3]}));
    same(&p("a = 1\n, b = 2"), &json!({"a": 1, "b": 2}));
    same(
        &p("x { a = 1\n  , b = [\"s\"]\n}\n, c = 3"),
        &json!({"x": {"a": 1, "b": ["s"]}, "c": 3}),
    );
    // still one comma per separator
    for bad in ["a = [1\n, , 2]", "a = 1\n,\n, b = 2", "a = [1,\n, 2]"] {
        assert!(
            matches!(perr(bad), HoconError::Syntax { .. }),
            "{bad} should be a syntax error"
        );
    }
}

#[test]
fn undefined_optional_substitutions_with_whitespace_between_leave_the_whitespace() {
    same(&p("a = ${?nope1} ${?nope2}"), &json!({"a": " "}));
    // without whitespace between them, no field is made
    same(&p("a = ${?nope1}${?nope2}"), &json!({}));
    same(&p("a = ${?nope1}"), &json!({}));
    same(
        &p("x = hi\na = ${?nope1} ${x}"),
        &json!({"x": "hi", "a": " hi"}),
    );
}

#[test]
fn unquoted_text_after_an_array_or_object_is_dropped_as_in_typesafe() {
    same(
        &p("f: [ \"a\", \"b\"]; \ng: 1"),
        &json!({"f": ["a", "b"], "g": 1}),
    );
    same(&p("f: [1] ;\r\ng: 1"), &json!({"f": [1], "g": 1}));
    same(&p("o: { x: 1 } trailing words"), &json!({"o": {"x": 1}}));
    same(&p("f: [1] junk [2]"), &json!({"f": [1, 2]}));
    same(&p("l = [1]\nf: ${l};"), &json!({"l": [1], "f": [1]}));
    // a string substitution still joins the text that follows it
    same(&p("s = ab\nf: ${s}cd"), &json!({"s": "ab", "f": "abcd"}));
    // quoted text, numbers and booleans after an array are still type errors, as in Typesafe
    for bad in ["f: [1] \"x\"", "f: [1] 2", "f: [1] true", "f: text [1]"] {
        assert!(
            matches!(perr(bad), HoconError::Type { .. }),
            "{bad} should be a type error"
        );
    }
}
