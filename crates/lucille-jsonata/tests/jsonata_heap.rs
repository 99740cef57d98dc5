//! Process-wide heap accounting: evaluating one expression many times must not grow the heap
//! beyond the recycled arena: no jsonata-rs value owns memory outside the arena (our fork of
//! jsonata-rs, third_party/jsonata-rs/PATCHES.md).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use lucille_jsonata::Expression;
use serde_json::json;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, only counting bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Returns (peak live-heap growth during the run, growth left after dropping the expression).
fn run(expr: &str, input: &serde_json::Value, n: usize) -> (isize, isize) {
    let base = live();
    let mut e = Expression::compile(expr).unwrap();
    let mut peak = 0;
    for _ in 0..n {
        std::hint::black_box(e.evaluate(input).unwrap());
        peak = peak.max(live() - base);
    }
    drop(e);
    (peak, live() - base)
}

/// One test only: the live-byte counter is process-wide, so tests must not run in parallel.
#[test]
fn heap_stays_bounded() {
    let n = 50_000;
    let input = json!({"name": "widget", "tags": ["a", "b"], "o": {"z": 1, "y": 2}});
    // The fuzz target's reproducer of the transform leak: the expression, NUL, the document.
    let leak = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/fuzz-regressions/jsonata-transform-leak.bin"),
    )
    .unwrap();
    let nul = leak.iter().position(|&b| b == 0).unwrap();
    let leak_expr = std::str::from_utf8(&leak[..nul]).unwrap();
    let leak_input: serde_json::Value = serde_json::from_slice(&leak[nul + 1..]).unwrap();
    let cases = [
        "$uppercase(name)",
        r#"{"n": name, "k": $keys(o), "s": $string(o), "t": $join(tags, ",")}"#,
        // Function and regex literals passed straight to higher-order builtins.
        "$map(tags, function($t){ $uppercase($t) })",
        r#"$filter(tags, function($t){ $contains($t, /a/) }) ~> $sort(function($a, $b){ $a > $b })"#,
        r#"$each(o, function($v, $k){ $replace($k, /z/, "Z") })"#,
        // Function literals bound to a variable, a transform, a regex literal used outside the
        // builtins and the tail-call thunks of a `$reduce` callback: jsonata-rs 0.3.4 copied
        // parts of the syntax tree (and frames) to the heap for each of these, leaked on every
        // evaluation (5.6 KiB for the first); our fork (third_party/jsonata-rs) borrows them.
        "($f := function($t){ $uppercase($t) }; tags.$f($))",
        r#"$ ~> |o|{"x": 1}|"#,
        r#"($r := /w/i; $r and [/x/, $r][1] and name = "widget")"#,
        r#"$reduce(tags, function($acc, $t){ $join([$acc, $t], "-") }, "")"#,
    ];
    let cases = cases
        .iter()
        .map(|&expr| (expr, &input))
        .chain([(leak_expr, &leak_input)]);
    for (expr, input) in cases {
        let (peak, after) = run(expr, input, n);
        eprintln!(
            "{expr}: {n} evaluations, peak heap growth {peak} B, after drop {after} B ({} B per \
             evaluation)",
            after / n as isize
        );
        // Anything an evaluation leaves on the heap outside the recycled arena shows here:
        // jsonata-rs 0.3.4's builtin values alone were ~300 B per evaluation (15 MB here).
        assert!(
            peak < 3 * lucille_jsonata::ARENA_RECYCLE_BYTES as isize,
            "{expr}: peak {peak}"
        );
        assert!(after < 64 * 1024, "{expr}: {after} bytes left after drop");
    }
}
