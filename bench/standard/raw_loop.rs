//! The raw reference of the standard benchmark: read JSON lines, parse each into a
//! `serde_json::Value` and serialise it again into an output file, on N threads, with nothing
//! else (no stages, no accounting, no queues beyond handing blocks of lines to the threads).
//!
//!   cargo run --release --example raw_loop -- CORPUS OUT THREADS

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::Arc;

use parking_lot::Mutex;

const BLOCK: usize = 1024;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: raw_loop CORPUS OUT THREADS");
        std::process::exit(2);
    }
    let threads: usize = args[3].parse().unwrap_or(1).max(1);
    let out = Arc::new(Mutex::new(BufWriter::with_capacity(
        1 << 20,
        File::create(&args[2])?,
    )));
    let (tx, rx) = crossbeam_channel::bounded::<Vec<String>>(threads * 4);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (rx, out) = (rx.clone(), out.clone());
            std::thread::spawn(move || -> std::io::Result<u64> {
                let mut buf = Vec::with_capacity(BLOCK * 1200);
                let mut n = 0;
                for block in rx {
                    buf.clear();
                    for line in &block {
                        let v: serde_json::Value =
                            serde_json::from_str(line).map_err(std::io::Error::other)?;
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
