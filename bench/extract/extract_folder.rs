//! Extracts every file of a folder with Lucille-rs's extractors (the engine of TextExtractor
//! and the FileConnector's `documents` handler).
//!
//! `cargo run --release --example extract_folder -- FOLDER [--show] [--threads N] [--repeat N]`
//! prints one line per file with `--show` (format, characters, metadata, or the error), and
//! always a summary: files, failures, bytes, seconds, documents/s and MB/s.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use lucille_extract::{extract, Options};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut folder = None;
    let mut show = false;
    let mut threads = 1usize;
    let mut repeat = 1usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--show" => show = true,
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            other => folder = Some(PathBuf::from(other)),
        }
    }
    let Some(folder) = folder else {
        eprintln!("usage: extract_folder FOLDER [--show] [--threads N] [--repeat N]");
        std::process::exit(2);
    };
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&folder)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect();
    files.sort();
    // Read first: the measurement is extraction, not the disk.
    let contents: Vec<(PathBuf, Vec<u8>)> = files
        .into_iter()
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect();
    let bytes: usize = contents.iter().map(|(_, b)| b.len()).sum::<usize>() * repeat;
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let chars = AtomicUsize::new(0);
    let total = contents.len() * repeat;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let (path, data) = &contents[i % contents.len()];
                match extract(data, &Options::unlimited()) {
                    Ok(x) => {
                        chars.fetch_add(x.text.chars().count(), Ordering::Relaxed);
                        if show && i < contents.len() {
                            println!(
                                "{}\t{}\t{} chars\t{:?}\n---\n{}\n---",
                                path.display(),
                                x.format.mime(),
                                x.text.chars().count(),
                                x.metadata.entries(),
                                x.text.chars().take(400).collect::<String>()
                            );
                        }
                    }
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        if show && i < contents.len() {
                            println!("{}\tFAILED\t{e}", path.display());
                        }
                    }
                }
            });
        }
    });
    let secs = start.elapsed().as_secs_f64();
    println!(
        "files={total} failed={} bytes={bytes} chars={} seconds={secs:.3} docs_per_s={:.1} mb_per_s={:.2}",
        failed.load(Ordering::Relaxed),
        chars.load(Ordering::Relaxed),
        total as f64 / secs,
        bytes as f64 / 1e6 / secs
    );
}
