use super::*;
use proptest::prelude::*;
use serde_json::json;

fn doc(json: Value) -> Document {
    Document::from_value(json).unwrap()
}

#[test]
fn new_requires_non_empty_id() {
    assert_eq!(Document::new(""), Err(DocumentError::EmptyId));
    let d = Document::new("a").unwrap();
    assert_eq!(d.id(), "a");
    assert_eq!(d.run_id(), None);
    assert_eq!(d.to_json(), r#"{"id":"a"}"#);
    assert_ne!(
        Document::with_random_id().id(),
        Document::with_random_id().id()
    );
}

#[test]
fn from_json_validates_shape_and_id() {
    let cases = [
        ("[1,2]", "must be a JSON object"),
        ("\"x\"", "must be a JSON object"),
        ("{\"title\":1}", "no \"id\""),
        ("{\"id\":5}", "\"id\" must be a string"),
        ("{\"id\":null}", "\"id\" must be a string"),
        ("{\"id\":\"a\",\"run_id\":3}", "\"run_id\" must be a string"),
        ("{\"id\":\"a\"", "invalid document JSON"),
        ("{\"id\":\"a\",\"___children\":[1]}", "___children"),
        ("", "invalid document JSON"),
    ];
    for (text, expected) in cases {
        let err = Document::from_json(text).unwrap_err().to_string();
        assert!(err.contains(expected), "{text}: {err}");
    }
    assert_eq!(
        Document::from_json("{\"id\":\"\"}"),
        Err(DocumentError::EmptyId)
    );
}

#[test]
fn json_round_trip_is_exact() {
    let text = r#"{"id":"d","run_id":"r","i":-3,"u":18446744073709551615,"big":-9223372036854775808,"f":1.0,"g":0.1,"e":1e+300,"s":"héllo ✓ 😀","n":null,"b":true,"l":[1,"a",{"x":[]}],"o":{"z":1,"a":2},"___children":[{"id":"c1"}]}"#;
    let d = Document::from_json(text).unwrap();
    let out = d.to_json();
    // Same bytes out: integers, u64, 1.0 as a float, exponent form and unicode all kept.
    assert_eq!(out, text);
    assert_eq!(d.get("u"), Some(&json!(u64::MAX)));
    assert!(d.get("f").unwrap().is_f64());
    assert!(d.get("i").unwrap().is_i64());
    assert_eq!(d.run_id(), Some("r"));
    assert_eq!(d.children().len(), 1);
    let mut buf = Vec::new();
    d.write_json(&mut buf).unwrap();
    assert_eq!(String::from_utf8(buf).unwrap(), text);
}

#[test]
fn insertion_order_is_kept_through_every_write() {
    let mut d = Document::new("d").unwrap();
    d.set_field("z", 1).unwrap();
    d.set_field("a", 2).unwrap();
    d.set_field("m", 3).unwrap();
    d.set_field("z", 10).unwrap(); // overwrite keeps position
    d.add_to_field("a", 20).unwrap(); // conversion to list keeps position
    d.remove_field("a").unwrap();
    d.set_field("a", 5).unwrap(); // re-added at the end
    d.rename_field("m", "k", UpdateMode::Overwrite).unwrap();
    let names: Vec<_> = d.field_names().collect();
    assert_eq!(names, ["z", "a", "k"]);
    assert_eq!(d.to_json(), r#"{"id":"d","z":10,"a":5,"k":3}"#);
}

#[test]
fn reserved_and_empty_names_are_rejected_on_every_write() {
    let mut d = Document::new("d").unwrap();
    for name in RESERVED_FIELDS {
        let reserved = |r: Result<(), DocumentError>| {
            assert!(
                matches!(r, Err(DocumentError::ReservedField { ref field, .. }) if field == name),
                "{name}: {r:?}"
            )
        };
        reserved(d.set_field(name, 1));
        reserved(d.add_to_field(name, 1));
        reserved(d.set_or_add(name, 1));
        reserved(d.update(name, UpdateMode::Overwrite, [1]));
        reserved(d.remove_field(name).map(|_| ()));
        reserved(d.rename_field(name, "x", UpdateMode::Overwrite).map(|_| ()));
        reserved(d.rename_field("x", name, UpdateMode::Overwrite).map(|_| ()));
        reserved(d.set_nested(&format!("{name}.a"), 1));
        reserved(d.remove_nested(name).map(|_| ()));
        reserved(d.set_vector(name, &[1.0]));
        reserved(d.remove_from_array(name, 0).map(|_| ()));
    }
    assert!(matches!(
        d.set_field("", 1),
        Err(DocumentError::EmptyFieldName { .. })
    ));
    assert_eq!(d.id(), "d");
}

#[test]
fn typed_getters_convert_like_lucille() {
    let d = doc(json!({
        "id": "d", "n": 12, "s": "34", "f": 1.5, "b": true, "multi": ["7", 8],
        "nul": null, "obj": {"a": 1}, "empty": [], "bad": "x"
    }));
    assert_eq!(d.get_string("n").unwrap().as_deref(), Some("12"));
    assert_eq!(d.get_string("f").unwrap().as_deref(), Some("1.5"));
    assert_eq!(d.get_string("b").unwrap().as_deref(), Some("true"));
    assert_eq!(d.get_i64("s").unwrap(), Some(34));
    assert_eq!(d.get_f64("n").unwrap(), Some(12.0));
    assert_eq!(d.get_i64("multi").unwrap(), Some(7));
    assert_eq!(d.get_string("absent").unwrap(), None);
    assert_eq!(d.get_string("nul").unwrap(), None);
    assert_eq!(d.get_string("empty").unwrap(), None);
    assert_eq!(d.get_str("s"), Some("34"));
    assert_eq!(d.get_str("n"), None);
    let err = d.get_i64("obj").unwrap_err();
    assert!(err.is_type_error());
    assert_eq!(
        err,
        DocumentError::TypeMismatch {
            id: "d".into(),
            field: "obj".into(),
            expected: "a 64-bit integer",
            found: "an object"
        }
    );
    let err = d.get_i64("bad").unwrap_err();
    assert!(!err.is_type_error());
    assert!(err.to_string().contains("\"bad\""), "{err}");
    assert_eq!(
        d.get_list_as::<i64>("multi").unwrap(),
        vec![Some(7), Some(8)]
    );
    assert_eq!(d.get_string_list("n").unwrap(), vec!["12"]);
    assert!(d.get_string_list("absent").unwrap().is_empty());
    assert_eq!(d.values("n"), &[json!(12)]);
    assert_eq!(d.len_of("multi"), 2);
    assert_eq!(d.len_of("n"), 1);
    assert_eq!(d.len_of("absent"), 0);
}

#[test]
fn has_and_multivalued() {
    let d = doc(json!({"id": "d", "a": null, "b": [], "c": 1}));
    assert!(d.has("a") && !d.has_non_null("a"));
    assert!(d.has_non_null("b") && d.is_multivalued("b"));
    assert!(d.has("c") && !d.is_multivalued("c"));
    assert!(!d.has("zz") && !d.has_non_null("zz"));
    assert!(d.has("id"));
    assert_eq!(d.field_count(), 3);
}

#[test]
fn add_set_or_add_and_update_modes() {
    let mut d = Document::new("d").unwrap();
    d.add_to_field("tags", "a").unwrap();
    assert_eq!(d.get("tags"), Some(&json!(["a"])));
    d.set_or_add("one", "x").unwrap();
    assert_eq!(d.get("one"), Some(&json!("x")));
    d.set_or_add("one", "y").unwrap();
    assert_eq!(d.get("one"), Some(&json!(["x", "y"])));

    d.update("t", UpdateMode::Append, ["a"]).unwrap();
    assert_eq!(
        d.get("t"),
        Some(&json!("a")),
        "APPEND on absent makes it single-valued"
    );
    d.update("t", UpdateMode::Append, ["b", "c"]).unwrap();
    assert_eq!(d.get("t"), Some(&json!(["a", "b", "c"])));
    d.update("t", UpdateMode::Overwrite, ["z"]).unwrap();
    assert_eq!(d.get("t"), Some(&json!("z")));
    d.update("t", UpdateMode::Overwrite, ["p", "q"]).unwrap();
    assert_eq!(d.get("t"), Some(&json!(["p", "q"])));
    d.update("t", UpdateMode::Skip, ["never"]).unwrap();
    assert_eq!(d.get("t"), Some(&json!(["p", "q"])));
    d.update("s", UpdateMode::Skip, ["first", "second"])
        .unwrap();
    assert_eq!(d.get("s"), Some(&json!(["first", "second"])));
    d.update("t", UpdateMode::Overwrite, Vec::<Value>::new())
        .unwrap();
    assert_eq!(d.get("t"), Some(&json!(["p", "q"])), "no values: no change");
    assert_eq!(UpdateMode::parse("APPEND"), Some(UpdateMode::Append));
    assert_eq!(UpdateMode::parse("nope"), None);
}

#[test]
fn set_or_add_all_merges_fields_not_reserved() {
    let mut a = doc(json!({"id": "a", "x": 1, "l": [1]}));
    let mut b = doc(json!({"id": "b", "x": 2, "l": [2, 3], "new": "n"}));
    b.set_dropped(true);
    b.add_child(Document::new("kid").unwrap());
    a.set_or_add_all(&b);
    assert_eq!(a.to_json(), r#"{"id":"a","x":[1,2],"l":[1,2,3],"new":"n"}"#);
}

#[test]
fn rename_field_modes() {
    let mut d = doc(json!({"id": "d", "a": 1, "b": 2}));
    assert!(d.rename_field("a", "b", UpdateMode::Append).unwrap());
    assert_eq!(d.to_json(), r#"{"id":"d","b":[2,1]}"#);

    let mut d = doc(json!({"id": "d", "a": [1, 2], "b": 3}));
    d.rename_field("a", "b", UpdateMode::Skip).unwrap();
    assert_eq!(
        d.to_json(),
        r#"{"id":"d","b":3}"#,
        "SKIP drops the old field"
    );

    let mut d = doc(json!({"id": "d", "a": 1, "b": 2}));
    d.rename_field("a", "b", UpdateMode::Overwrite).unwrap();
    assert_eq!(d.to_json(), r#"{"id":"d","b":1}"#);

    assert!(!d
        .rename_field("missing", "c", UpdateMode::Overwrite)
        .unwrap());
    assert!(!d.has("c"));
    assert!(d.rename_field("b", "b", UpdateMode::Overwrite).unwrap());
    assert_eq!(d.get("b"), Some(&json!(1)));
}

#[test]
fn remove_field_and_from_array() {
    let mut d = doc(json!({"id": "d", "l": [1, 2, 3], "s": "x"}));
    assert_eq!(d.remove_from_array("l", 1).unwrap(), json!(2));
    assert_eq!(d.get("l"), Some(&json!([1, 3])));
    assert!(matches!(
        d.remove_from_array("l", 5),
        Err(DocumentError::IndexOutOfRange {
            index: 5,
            len: 2,
            ..
        })
    ));
    assert_eq!(d.remove_from_array("s", 0).unwrap(), json!("x"));
    assert!(!d.has("s"));
    assert!(d.remove_from_array("absent", 0).is_err());
    assert_eq!(d.remove_field("l").unwrap(), Some(json!([1, 3])));
    assert_eq!(d.remove_field("l").unwrap(), None);
}

#[test]
fn remove_duplicate_values_keeps_first_occurrences() {
    let mut d = doc(json!({"id": "d", "l": ["a", "b", "a", 1, "1", 1], "s": "x"}));
    d.remove_duplicate_values("l", Some("u")).unwrap();
    assert_eq!(d.get("u"), Some(&json!(["a", "b", 1, "1"])));
    d.remove_duplicate_values("l", None).unwrap();
    assert_eq!(d.get("l"), Some(&json!(["a", "b", 1, "1"])));
    d.remove_duplicate_values("s", Some("s2")).unwrap();
    assert_eq!(d.get("s2"), Some(&json!("x")));
}

#[test]
fn nested_get_set_remove() {
    let mut d = doc(json!({"id": "d", "a": {"b": [{"c": 1}, {"c": 2}]}}));
    assert_eq!(d.get_nested("a.b[1].c").unwrap(), Some(&json!(2)));
    assert_eq!(d.get_nested("a.b[5].c").unwrap(), None);
    assert_eq!(d.get_nested("a.x").unwrap(), None);
    assert_eq!(
        d.get_nested("a[0]").unwrap(),
        None,
        "indexing an object finds nothing"
    );
    assert!(d.get_nested("a..b").is_err());

    d.set_nested("a.b[1].c", 20).unwrap();
    d.set_nested("a.b[2].c", 3).unwrap(); // index == len appends
    d.set_nested("x.y[0].z", "new").unwrap(); // creates object, list, object
    d.set_nested("top", true).unwrap();
    assert_eq!(
        d.to_json(),
        r#"{"id":"d","a":{"b":[{"c":1},{"c":20},{"c":3}]},"x":{"y":[{"z":"new"}]},"top":true}"#
    );
    let err = d.set_nested("a.b[9].c", 1).unwrap_err();
    assert!(matches!(err, DocumentError::PathConflict { .. }), "{err}");
    assert!(err.to_string().contains("a.b[9].c"));
    assert!(d.set_nested("top.deeper", 1).is_err());
    assert!(d.set_nested("a[0]", 1).is_err());
    assert!(d.set_nested("a b", 1).is_err());

    assert_eq!(d.remove_nested("a.b[0]").unwrap(), Some(json!({"c": 1})));
    assert_eq!(d.remove_nested("a.b[0].c").unwrap(), Some(json!(20)));
    assert_eq!(d.remove_nested("a.nothing.here").unwrap(), None);
    assert_eq!(
        d.remove_nested("x").unwrap(),
        Some(json!({"y": [{"z": "new"}]}))
    );
    assert_eq!(
        d.to_json(),
        r#"{"id":"d","a":{"b":[{},{"c":3}]},"top":true}"#
    );
}

#[test]
fn children_and_flags() {
    let mut parent = Document::new("p").unwrap();
    assert!(!parent.has_children());
    let mut child = Document::new("p-1").unwrap();
    child.set_field("text", "chunk").unwrap();
    parent.add_child(child.clone());
    parent.add_child(Document::new("p-2").unwrap());
    assert!(parent.has_children());
    let kids = parent.children();
    assert_eq!(kids.len(), 2);
    assert_eq!(kids[0], child);
    assert_eq!(parent.field_count(), 0, "children are not a field");
    let round = Document::from_json(&parent.to_json()).unwrap();
    assert_eq!(round.children().len(), 2);
    assert_eq!(parent.take_children().len(), 2);
    assert!(!parent.has_children());

    parent.set_dropped(true);
    parent.set_skipped(true);
    assert!(parent.is_dropped() && parent.is_skipped());
    parent.set_dropped(false);
    assert!(!parent.is_dropped() && parent.is_skipped());
    assert_eq!(parent.field_names().count(), 0);
}

#[test]
fn run_id_is_stamped_once() {
    let mut d = Document::new("d").unwrap();
    d.initialize_run_id("r1").unwrap();
    assert_eq!(d.run_id(), Some("r1"));
    assert!(matches!(
        d.initialize_run_id("r2"),
        Err(DocumentError::RunIdAlreadySet { .. })
    ));
    d.clear_run_id();
    assert_eq!(d.run_id(), None);
}

#[test]
fn vectors_and_bytes() {
    let mut d = Document::new("d").unwrap();
    d.set_vector("v", &[0.1, -2.5, 3.0]).unwrap();
    assert_eq!(d.to_json(), r#"{"id":"d","v":[0.1,-2.5,3.0]}"#);
    assert_eq!(d.get_vector("v").unwrap(), Some(vec![0.1, -2.5, 3.0]));
    assert_eq!(d.get_vector("none").unwrap(), None);
    assert!(d.set_vector("bad", &[f32::NAN]).is_err());
    d.set_field("mixed", json!([1, "x"])).unwrap();
    assert!(d.get_vector("mixed").unwrap_err().is_type_error());

    d.set_bytes("raw", &[0, 159, 255]).unwrap();
    assert_eq!(d.get_str("raw"), Some("AJ//"));
    assert_eq!(d.get_bytes("raw").unwrap(), Some(vec![0, 159, 255]));
    d.set_field("notb64", "***").unwrap();
    assert!(d.get_bytes("notb64").is_err());
}

#[test]
fn equality_ignores_field_order_but_not_values() {
    let a = Document::from_json(r#"{"id":"d","x":1,"y":2}"#).unwrap();
    let b = Document::from_json(r#"{"id":"d","y":2,"x":1}"#).unwrap();
    let c = Document::from_json(r#"{"id":"d","y":2,"x":1.0}"#).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn evaluate_and_transform() {
    let mut d = doc(json!({"id": "d", "first": "Ada", "last": "Lovelace", "keep": 1}));
    let mut e = Expression::compile("first & ' ' & last").unwrap();
    assert_eq!(d.evaluate(&mut e).unwrap(), Some(json!("Ada Lovelace")));
    let mut undefined = Expression::compile("nothing.here").unwrap();
    assert_eq!(d.evaluate(&mut undefined).unwrap(), None);

    let mut t =
        Expression::compile("{'keep': keep, 'last': $uppercase(last), 'full': first & ' ' & last}")
            .unwrap();
    d.initialize_run_id("r").unwrap();
    d.transform(&mut t).unwrap();
    // Surviving fields keep their places; reserved fields kept; new fields follow.
    assert_eq!(
        d.to_json(),
        r#"{"id":"d","last":"LOVELACE","keep":1,"run_id":"r","full":"Ada Lovelace"}"#
    );

    let before = d.clone();
    for (expr, reason) in [
        ("'just a string'", "must return an object"),
        ("nothing.here", "undefined"),
        ("{'id': 'other'}", "reserved field \"id\""),
        ("{'run_id': 'other'}", "reserved field \"run_id\""),
    ] {
        let mut x = Expression::compile(expr).unwrap();
        let err = d.transform(&mut x).unwrap_err().to_string();
        assert!(err.contains(reason), "{expr}: {err}");
        assert_eq!(
            d, before,
            "a failed transform leaves the document unchanged"
        );
    }
    // Re-stating the same id is allowed.
    let mut same = Expression::compile("{'id': id, 'x': 1}").unwrap();
    d.transform(&mut same).unwrap();
    assert_eq!(d.to_json(), r#"{"id":"d","run_id":"r","x":1}"#);
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-z_]{1,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_document_round_trips_through_json(
        id in "\\PC{1,10}",
        fields in proptest::collection::vec(("[a-z]{1,6}".prop_filter("not reserved", |k| !is_reserved(k)), json_value()), 0..8)
    ) {
        let mut d = Document::new(id).unwrap();
        for (k, v) in fields {
            d.set_field(&k, v).unwrap();
        }
        let text = d.to_json();
        let back = Document::from_json(&text).unwrap();
        prop_assert_eq!(&back, &d);
        prop_assert_eq!(back.to_json(), text);
        let names: Vec<_> = back.field_names().collect();
        let original: Vec<_> = d.field_names().collect();
        prop_assert_eq!(names, original);
    }
}
