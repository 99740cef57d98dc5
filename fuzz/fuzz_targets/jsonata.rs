//! JSONata compile + evaluate: the expression is the input up to its first NUL byte, the
//! document the JSON after it (a fixed small document otherwise). Neither step may panic,
//! abort or hang; an evaluation is limited to 1 s as the JSONata stages can be.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use lucille_jsonata::Expression;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let (expr, doc) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(expr) = std::str::from_utf8(expr) else {
        return;
    };
    let input: Value = serde_json::from_slice(doc).unwrap_or_else(|_| {
        json!({"id": "d", "title": "Hammer", "price": 12.5, "tags": ["a", "b"],
               "items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 0}]})
    });
    let Ok(mut expression) = Expression::compile(expr) else {
        return;
    };
    expression.set_time_limit(Some(Duration::from_secs(1)));
    let _ = expression.evaluate(&input);
    // a second evaluation reuses the arena (and recycles it when it grew)
    let _ = expression.evaluate(&input);
});
