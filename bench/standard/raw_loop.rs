//! The raw reference of the standard benchmark: read JSON lines, parse each into a
//! `serde_json::Value` and serialise it again into an output file, on N threads, with nothing
//! else (no stages, no accounting, no queues beyond handing blocks of lines to the threads).
//! With `stages`, each record also gets the standard pipeline's six edits, written by hand with
//! the libraries our stages use (serde_json, regex, chrono) as `pure_python.py` writes them with
//! Python's: the floor for the whole job in Rust, without a framework.
//!
//!   cargo run --release --example raw_loop -- CORPUS OUT THREADS [stages]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::Arc;

use parking_lot::Mutex;

const BLOCK: usize = 1024;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let stages = match args.get(4).map(String::as_str) {
        None => false,
        Some("stages") if args.len() == 5 => true,
        _ => {
            eprintln!("usage: raw_loop CORPUS OUT THREADS [stages]");
            std::process::exit(2);
        }
    };
    if args.len() < 4 {
        eprintln!("usage: raw_loop CORPUS OUT THREADS [stages]");
        std::process::exit(2);
    }
    let the = regex::Regex::new(r"\bthe\b").map_err(std::io::Error::other)?;
    let threads: usize = args[3].parse().unwrap_or(1).max(1);
    let out = Arc::new(Mutex::new(BufWriter::with_capacity(
        1 << 20,
        File::create(&args[2])?,
    )));
    let (tx, rx) = crossbeam_channel::bounded::<Vec<String>>(threads * 4);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (rx, out, the) = (rx.clone(), out.clone(), the.clone());
            std::thread::spawn(move || -> std::io::Result<u64> {
                let mut buf = Vec::with_capacity(BLOCK * 1200);
                let mut n = 0;
                for block in rx {
                    buf.clear();
                    for line in &block {
                        let mut v: serde_json::Value =
                            serde_json::from_str(line).map_err(std::io::Error::other)?;
                        if stages {
                            six_edits(&mut v, &the);
                        }
                        serde_json::to_writer(&mut buf, &v).map_err(std::io::Error::other)?;
                        buf.push(b'\n');
                        n += 1;
                    }
                    out.lock().write_all(&buf)?;
                }
                Ok(n)
            })
        })
        .collect();
    drop(rx);
    let mut reader = BufReader::with_capacity(1 << 20, File::open(&args[1])?);
    let mut block = Vec::with_capacity(BLOCK);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        block.push(line);
        if block.len() == BLOCK {
            let _ = tx.send(std::mem::replace(&mut block, Vec::with_capacity(BLOCK)));
        }
    }
    if !block.is_empty() {
        let _ = tx.send(block);
    }
    drop(tx);
    let mut total = 0;
    for w in workers {
        total += w
            .join()
            .map_err(|_| std::io::Error::other("a thread panicked"))??;
    }
    out.lock().flush()?;
    eprintln!("{total} records");
    Ok(())
}

/// The six stages of `six_stages.conf`, as `pure_python.py` does them: CopyFields, RenameFields,
/// Concatenate, ReplacePatterns, Length, ParseDate (to the same text our ParseDate writes).
fn six_edits(v: &mut serde_json::Value, the: &regex::Regex) {
    use serde_json::Value;
    let Some(d) = v.as_object_mut() else { return };
    if let Some(title) = d.get("title").cloned() {
        d.insert("title_copy".into(), title);
    }
    if let Some(year) = d.shift_remove("year") {
        d.insert("publication_year".into(), year);
    }
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let summary = format!(
        "{} ({}), {}",
        text(d.get("title")),
        text(d.get("publication_year")),
        text(d.get("price"))
    );
    d.insert("summary".into(), Value::String(summary));
    if let Some(Value::String(body)) = d.get("body") {
        let clean = the.replace_all(body, "").into_owned();
        d.insert("body_clean".into(), Value::String(clean));
    }
    if let Some(Value::Array(tags)) = d.get("tags") {
        let n = tags.len();
        d.insert("tag_count".into(), Value::from(n));
    }
    if let Some(Value::String(date)) = d.get("date") {
        if let Ok(day) = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d") {
            let at = day.and_time(chrono::NaiveTime::MIN).and_utc();
            let text = at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
            d.insert("date_parsed".into(), Value::String(text));
        }
    }
}
