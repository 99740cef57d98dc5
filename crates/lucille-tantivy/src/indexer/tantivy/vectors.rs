//! Vector codes: the approximate path of a vector search over many documents.
//!
//! For each segment of an index with a `vector` field, a file beside the segment's own
//! (`{segment}.{field in hex}.lucvec`) holds each document's vector in two short forms: its
//! signs (one bit a dimension) and its values in 8 bits with a scale. An unfiltered search over
//! many vectors ([`NARROWING`]) scans the signs (Hamming distance to the query's, the best
//! tenth kept), weighs the survivors' signs with the query's values (the best 16,000 kept),
//! re-ranks those by their 8-bit values and hands the best 50 (or the depth asked for, if
//! more) to be scored exactly from the fast field, as the exact
//! path does: hits and scores are the cosine either way; only a document the narrowing missed
//! can be absent. Deleted documents are skipped as the segment's alive set says.
//!
//! The files are written when the backend closes an index (after its merges), for the segments
//! that lack one, and those of segments the index no longer has are removed then; a search that
//! finds a segment without its file builds it (written beside the index when the folder takes
//! it, else kept in memory for that search).
//!
//! Written here rather than taken from an approximate-nearest-neighbour crate: the codes must be
//! built per Tantivy segment as segments are committed and merged, and die with them, which a
//! graph index (HNSW) built once over a collection does not do; a sign scan with an exact
//! re-rank is a few hundred lines and meets the goals (bench/README, "Vector search at a
//! million").

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Mmap, MmapMut, MmapOptions};
use tantivy::{DocAddress, DocId, Searcher, SegmentReader};

const MAGIC: &[u8; 8] = b"LUCVEC01";
const HEADER: usize = 32;
const SUFFIX: &str = ".lucvec";

/// How the approximate path narrows the candidates.
#[derive(Debug, Clone, Copy)]
pub struct Narrowing {
    /// Below this many live documents the exact scan is fast enough.
    pub min_vectors: usize,
    /// The share of the vectors the sign scan keeps (one in this many, at least `weighed`).
    pub signs_keep_one_in: usize,
    /// How many the weighed signs keep for the 8-bit re-rank.
    pub weighed: usize,
    /// How many the 8-bit re-rank keeps for the exact score (or the depth asked, if more).
    pub exact: usize,
    /// The deepest ranking the approximate path answers; deeper ones take the exact scan.
    pub max_depth: usize,
}

/// What searches use: at 1,000,000 vectors of 384 dimensions, 100,000 go on from the sign
/// scan, 16,000 from the weighed signs and 50 from the 8-bit values (bench/README, "Vector
/// search at a million", has the recall and the time of each stage).
pub const NARROWING: Narrowing = Narrowing {
    min_vectors: 50_000,
    signs_keep_one_in: 10,
    weighed: 16_000,
    exact: 50,
    max_depth: 2_000,
};

/// One segment's codes, mapped from its file or built in memory.
pub(super) struct Codes {
    map: Mmap,
    dims: usize,
    /// Bytes of one document's signs: `dims` bits rounded up to whole u64s.
    sign_bytes: usize,
    max_doc: usize,
}

impl Codes {
    fn size(dims: usize, max_doc: usize) -> usize {
        HEADER + max_doc * (8 + sign_bytes(dims) + dims)
    }

    fn parse(map: Mmap) -> Option<Codes> {
        if map.len() < HEADER || &map[..8] != MAGIC {
            return None;
        }
        let word = |at: usize| u32::from_le_bytes([map[at], map[at + 1], map[at + 2], map[at + 3]]);
        let (dims, max_doc) = (word(8) as usize, word(12) as usize);
        if dims == 0 || map.len() != Codes::size(dims, max_doc) {
            return None;
        }
        Some(Codes {
            map,
            dims,
            sign_bytes: sign_bytes(dims),
            max_doc,
        })
    }

    /// The factor that turns the 8-bit values back into the vector's (0: no vector of
    /// `dims` values).
    #[inline(always)]
    fn scale(&self, doc: usize) -> f32 {
        f32_at(&self.map, HEADER + 4 * doc)
    }

    /// 1 / the vector's length.
    #[inline(always)]
    fn inv_norm(&self, doc: usize) -> f32 {
        f32_at(&self.map, HEADER + 4 * (self.max_doc + doc))
    }

    #[inline(always)]
    fn signs(&self, doc: usize) -> &[u8] {
        let at = HEADER + 8 * self.max_doc + doc * self.sign_bytes;
        &self.map[at..at + self.sign_bytes]
    }

    #[inline(always)]
    fn values(&self, doc: usize) -> &[u8] {
        let at = HEADER + (8 + self.sign_bytes) * self.max_doc + doc * self.dims;
        &self.map[at..at + self.dims]
    }
}

fn sign_bytes(dims: usize) -> usize {
    dims.div_ceil(64) * 8
}

#[inline(always)]
fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// `v`'s signs as the codes keep them: bit `i % 8` of byte `i / 8` set where `v[i] > 0`
/// (`out` is at least `v.len() / 8` bytes, rounded up).
#[inline(always)]
fn signs_of(v: &[f32], out: &mut [u8]) {
    out.fill(0);
    for (i, x) in v.iter().enumerate() {
        if *x > 0.0 {
            out[i / 8] |= 1 << (i % 8);
        }
    }
}

/// `v` in 8 bits as the codes keep it: each value divided by the scale (the largest magnitude
/// / 127) and rounded into -127..=127; the scale (0 when `v` is all zeros, `out` then
/// untouched).
#[inline(always)]
fn eight_bits(v: &[f32], out: &mut [i8]) -> f32 {
    let scale = v.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
    if scale > 0.0 {
        for (o, x) in out.iter_mut().zip(v) {
            *o = (x / scale).round().clamp(-127.0, 127.0) as i8;
        }
    }
    scale
}

/// The file of `field`'s codes for `segment`.
fn file_name(segment: &SegmentReader, field: &str) -> String {
    let hex: String = field.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{}.{hex}{SUFFIX}", segment.segment_id().uuid_string())
}

/// The length of the vectors of `field` in `segment` (that of its first), if it has any.
fn dims_of(segment: &SegmentReader, field: &str) -> tantivy::Result<Option<usize>> {
    let Some(column) = segment.fast_fields().bytes(field)? else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    for doc in 0..segment.max_doc() {
        if let Some(ord) = column.term_ords(doc).next() {
            if column.ord_to_bytes(ord, &mut buf)? && !buf.is_empty() && buf.len() % 4 == 0 {
                return Ok(Some(buf.len() / 4));
            }
        }
    }
    Ok(None)
}

/// Calls `f(docs, bytes)` with the value of `field` (a bytes fast field) of each of `docs` in
/// `segment`, the documents that share a value together. Few documents are looked up one by
/// one; many are read in one pass over the column's dictionary in its order, each of its
/// (zstd-compressed) blocks decompressed once, where a lookup decompresses a block per
/// document.
pub(super) fn each_value(
    segment: &SegmentReader,
    field: &str,
    docs: impl Iterator<Item = DocId>,
    mut f: impl FnMut(&[DocId], &[u8]),
) -> tantivy::Result<()> {
    let Some(column) = segment.fast_fields().bytes(field)? else {
        return Ok(());
    };
    let mut holders: Vec<(u64, DocId)> = docs
        .filter_map(|doc| column.term_ords(doc).next().map(|ord| (ord, doc)))
        .collect();
    holders.sort_unstable();
    let mut buf = Vec::new();
    let mut group: Vec<DocId> = Vec::new();
    // A lookup per distinct value when they are fewer than the dictionary's blocks would be.
    if holders.len().saturating_mul(LOOKUPS_PER_BLOCK) < column.num_terms() {
        let mut i = 0;
        while i < holders.len() {
            let ord = holders[i].0;
            group.clear();
            while i < holders.len() && holders[i].0 == ord {
                group.push(holders[i].1);
                i += 1;
            }
            buf.clear();
            if column.ord_to_bytes(ord, &mut buf)? {
                f(&group, &buf);
            }
        }
        return Ok(());
    }
    let mut next = 0;
    let mut stream = column.dictionary().stream()?;
    while next < holders.len() && stream.advance() {
        let ord = stream.term_ord();
        while next < holders.len() && holders[next].0 < ord {
            next += 1;
        }
        group.clear();
        while next < holders.len() && holders[next].0 == ord {
            group.push(holders[next].1);
            next += 1;
        }
        if !group.is_empty() {
            f(&group, stream.key());
        }
    }
    Ok(())
}

/// About how many values one of a dictionary's blocks holds: below one lookup per this many
/// values, `each_value` looks them up one by one.
const LOOKUPS_PER_BLOCK: usize = 16;

/// Writes the codes of `field` in `segment` (vectors of `dims` values) into `out`, which is
/// [`Codes::size`] long and zeroed. The fast column is read in its dictionary's order (a
/// stream), each vector going to the documents that hold it.
fn write_codes(
    segment: &SegmentReader,
    field: &str,
    dims: usize,
    out: &mut [u8],
) -> tantivy::Result<()> {
    let max_doc = segment.max_doc() as usize;
    let signs_at = HEADER + 8 * max_doc;
    let sb = sign_bytes(dims);
    let values_at = signs_at + sb * max_doc;
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&(dims as u32).to_le_bytes());
    out[12..16].copy_from_slice(&(max_doc as u32).to_le_bytes());
    let mut vector = vec![0f32; dims];
    let mut signs = vec![0u8; sb];
    let mut values = vec![0i8; dims];
    each_value(segment, field, 0..segment.max_doc(), |docs, key| {
        if key.len() != dims * 4 {
            return;
        }
        for (v, c) in vector.iter_mut().zip(key.chunks_exact(4)) {
            *v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        let scale = eight_bits(&vector, &mut values);
        if !(norm.is_finite() && norm > 0.0 && scale > 0.0) {
            return;
        }
        signs_of(&vector, &mut signs);
        for doc in docs {
            let doc = *doc as usize;
            out[HEADER + 4 * doc..][..4].copy_from_slice(&scale.to_le_bytes());
            out[HEADER + 4 * (max_doc + doc)..][..4].copy_from_slice(&(1.0 / norm).to_le_bytes());
            out[signs_at + doc * sb..][..sb].copy_from_slice(&signs);
            for (o, v) in out[values_at + doc * dims..][..dims]
                .iter_mut()
                .zip(&values)
            {
                *o = *v as u8;
            }
        }
    })
}

/// Mapped code files by path. A file's name holds its segment's id and a segment never
/// changes (deletions are read from its alive set at search time), so a mapping stays right as
/// long as the file is there; one removed or replaced keeps its old inode alive until dropped
/// here. At most `CACHED` are kept (the oldest go first).
static MAPPED: std::sync::Mutex<Vec<(PathBuf, Arc<Codes>)>> = std::sync::Mutex::new(Vec::new());
const CACHED: usize = 64;

fn cached(path: &Path) -> Option<Arc<Codes>> {
    let mapped = MAPPED.lock().unwrap_or_else(|e| e.into_inner());
    mapped
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, c)| c.clone())
}

/// Drops every mapping (a test's way to read files afresh).
#[cfg(test)]
pub(super) fn forget_mapped() {
    MAPPED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

fn remember(path: &Path, codes: Codes) -> Arc<Codes> {
    let codes = Arc::new(codes);
    let mut mapped = MAPPED.lock().unwrap_or_else(|e| e.into_inner());
    mapped.retain(|(p, _)| p != path);
    if mapped.len() >= CACHED {
        mapped.remove(0);
    }
    mapped.push((path.to_path_buf(), codes.clone()));
    codes
}

/// The codes of `field` in `segment`: its file in `dir`, else built (and written there when
/// `persist` and the folder takes it; else kept in memory for this search only). `None`: the
/// segment has no vectors in that field.
pub(super) fn codes(
    dir: &Path,
    segment: &SegmentReader,
    field: &str,
    persist: bool,
) -> tantivy::Result<Option<Arc<Codes>>> {
    let path = dir.join(file_name(segment, field));
    if let Some(c) = cached(&path).filter(|_| path.exists()) {
        return Ok(Some(c));
    }
    if let Ok(file) = std::fs::File::open(&path) {
        // SAFETY: the file is never written after its rename into place (a new build writes a
        // new file and renames it over; a mapping keeps the old inode), and it is read as bytes.
        let map = unsafe { Mmap::map(&file)? };
        if let Some(c) = Codes::parse(map) {
            return Ok(Some(remember(&path, c)));
        }
    }
    let Some(dims) = dims_of(segment, field)? else {
        return Ok(None);
    };
    let size = Codes::size(dims, segment.max_doc() as usize);
    if persist {
        let fill =
            |out: &mut [u8]| write_codes(segment, field, dims, out).map_err(std::io::Error::other);
        match write_file(&path, size, fill) {
            Ok(map) => return Ok(Codes::parse(map).map(|c| remember(&path, c))),
            Err(e) => tracing::warn!(
                "cannot write the vector codes {} ({e}): each search of this index builds them",
                path.display()
            ),
        }
    }
    let mut anon = MmapMut::map_anon(size)?;
    write_codes(segment, field, dims, &mut anon)?;
    Ok(Codes::parse(anon.make_read_only()?).map(Arc::new))
}

/// Writes a file of `size` bytes through `fill` under a temporary name, then renames it into
/// place (a reader never sees half a file); its mapping.
fn write_file(
    path: &Path,
    size: usize,
    fill: impl FnOnce(&mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<Mmap> {
    let tmp = PathBuf::from(format!(
        "{}.{}-{:?}.tmp",
        path.display(),
        std::process::id(),
        std::thread::current().id()
    ));
    let result = (|| {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.set_len(size as u64)?;
        // SAFETY: the temporary file is this thread's own (its name has the process and thread
        // ids) until the rename below.
        let mut map = unsafe { MmapOptions::new().len(size).map_mut(&file)? };
        fill(&mut map)?;
        map.flush()?;
        (&file).flush()?;
        std::fs::rename(&tmp, path)?;
        map.make_read_only()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// After a writer's last commit and merges: writes the codes of every segment of the index at
/// `dir` that lacks them for each of `fields`, and removes the files of segments it no longer
/// has.
pub fn write_all(dir: &Path, index: &tantivy::Index, fields: &[String]) -> tantivy::Result<()> {
    let reader = index.reader()?;
    let searcher = reader.searcher();
    let mut live = std::collections::HashSet::new();
    for segment in searcher.segment_readers() {
        for field in fields {
            live.insert(file_name(segment, field));
            codes(dir, segment, field, true)?;
        }
    }
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let stale = (name.ends_with(SUFFIX) && !live.contains(name.as_ref()))
            || (name.contains(SUFFIX) && name.ends_with(".tmp"));
        if stale {
            let _ = std::fs::remove_file(dir.join(name.as_ref()));
        }
    }
    Ok(())
}

/// The documents to score exactly for the best `depth` by cosine to `query` among all those
/// with `field`, narrowed through the codes (stages 1 to 3: the best `n.exact`, or `depth`
/// if more, by their 8-bit values), in segment and document order; `None` when the exact
/// scan should answer (few vectors, a deep ranking, vectors of another length).
pub(super) fn narrow(
    searcher: &Searcher,
    dir: &Path,
    field: &str,
    query: &[f32],
    depth: usize,
    n: &Narrowing,
) -> tantivy::Result<Option<Vec<DocAddress>>> {
    let docs: u64 = searcher.num_docs();
    // (A distance is a u16, u16::MAX meaning no vector.)
    let long = query.len() >= u16::MAX as usize;
    if depth > n.max_depth || query.is_empty() || long || docs < n.min_vectors as u64 {
        return Ok(None);
    }
    let mut all = Vec::new();
    for segment in searcher.segment_readers() {
        match codes(dir, segment, field, true)? {
            Some(c) if c.dims == query.len() => all.push(Some(c)),
            Some(_) => return Ok(None),
            None => all.push(None),
        }
    }
    let alive: Vec<Option<&tantivy::fastfield::AliveBitSet>> = searcher
        .segment_readers()
        .iter()
        .map(|s| s.alive_bitset())
        .collect();
    let scan = Scan {
        all: &all,
        alive: &alive,
        query,
        depth,
        n,
    };
    let Some(eight) = candidates(&scan) else {
        return Ok(None);
    };
    let mut chosen: Vec<DocAddress> = eight
        .into_iter()
        .map(|(_, ord, doc)| DocAddress::new(ord, doc))
        .collect();
    chosen.sort_unstable();
    Ok(Some(chosen))
}

/// What stages 1 to 3 scan: the codes of every segment, each one's live documents, the query,
/// the depth asked for and the narrowing.
struct Scan<'a> {
    all: &'a [Option<Arc<Codes>>],
    alive: &'a [Option<&'a tantivy::fastfield::AliveBitSet>],
    query: &'a [f32],
    depth: usize,
    n: &'a Narrowing,
}

/// Stages 1 to 3: the best `n.exact` (or `depth`) candidates by their 8-bit values, as
/// (score, segment, doc); `None` below `n.min_vectors`. Compiled twice, for the baseline
/// target and with AVX2 and POPCNT (taken when the CPU has them): the same code, vectorised by
/// the compiler.
fn candidates(scan: &Scan<'_>) -> Option<Vec<(f32, u32, u32)>> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU has the features the function is compiled for (checked above).
            return unsafe { candidates_avx2(scan) };
        }
    }
    candidates_in(scan)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn candidates_avx2(scan: &Scan<'_>) -> Option<Vec<(f32, u32, u32)>> {
    candidates_in(scan)
}

#[inline(always)]
fn candidates_in(scan: &Scan<'_>) -> Option<Vec<(f32, u32, u32)>> {
    let Scan {
        all,
        alive,
        query,
        depth,
        n,
    } = *scan;
    let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    let q: Vec<f32> = query.iter().map(|x| x / norm).collect();
    let dims = q.len();

    // 1. Hamming distance of each live document's signs to the query's.
    let mut q_signs = vec![0u8; sign_bytes(dims)];
    signs_of(&q, &mut q_signs);
    let q_words: Vec<u64> = q_signs
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    let mut distances: Vec<Vec<u16>> = Vec::with_capacity(all.len());
    let mut histogram = vec![0usize; dims + 1];
    for (codes, alive) in all.iter().zip(alive) {
        let Some(c) = codes else {
            distances.push(Vec::new());
            continue;
        };
        let mut d = hamming_all(c, &q_words);
        if let Some(alive) = alive {
            for (doc, dist) in d.iter_mut().enumerate() {
                if !alive.is_alive(doc as DocId) {
                    *dist = u16::MAX;
                }
            }
        }
        for dist in &d {
            if let Some(h) = histogram.get_mut(*dist as usize) {
                *h += 1;
            }
        }
        distances.push(d);
    }
    let total: usize = histogram.iter().sum();
    if total < n.min_vectors {
        return None;
    }
    let keep = (total / n.signs_keep_one_in.max(1)).max(n.weighed.min(total));
    // The distance at which `keep` documents are reached; those closer all go on, those at it
    // only until `keep` is reached.
    let (mut cut, mut below) = (0usize, 0usize);
    while cut < histogram.len() && below + histogram[cut] < keep {
        below += histogram[cut];
        cut += 1;
    }
    let mut at_cut = keep - below;

    // 2. The survivors' signs weighed by the query's values: a table per byte of signs.
    let tables: Vec<[f32; 256]> = q_signs
        .iter()
        .enumerate()
        .map(|(byte, _)| {
            let mut t = [0f32; 256];
            for (v, slot) in t.iter_mut().enumerate() {
                *slot = (0..8)
                    .filter_map(|bit| q.get(byte * 8 + bit).map(|x| (bit, x)))
                    .map(|(bit, x)| if v >> bit & 1 == 1 { *x } else { -*x })
                    .sum();
            }
            t
        })
        .collect();
    let mut chosen: Vec<(u32, u32)> = Vec::with_capacity(keep);
    for (ord, d) in distances.iter().enumerate() {
        for (doc, dist) in d.iter().enumerate() {
            let dist = *dist as usize;
            let take = dist < cut || (dist == cut && at_cut > 0);
            if !take {
                continue;
            }
            if dist == cut {
                at_cut -= 1;
            }
            chosen.push((ord as u32, doc as u32));
        }
    }
    // The chosen are a tenth of the documents, scattered: their signs are asked for from
    // memory a few documents ahead (the scan waited on each one's first byte).
    let code = |(ord, doc): (u32, u32)| all[ord as usize].as_ref().map(|c| (c, doc as usize));
    let mut weighed: Vec<(f32, u32, u32)> = Vec::with_capacity(keep);
    for i in 0..chosen.len() {
        if let Some((c, doc)) = chosen.get(i + AHEAD).and_then(|x| code(*x)) {
            prefetch(c.signs(doc));
        }
        let Some((c, doc)) = code(chosen[i]) else {
            continue;
        };
        // Eight sums side by side: one running sum is a chain of dependent additions.
        let mut acc = [0f32; 8];
        for (bytes, t) in c.signs(doc).chunks_exact(8).zip(tables.chunks_exact(8)) {
            for k in 0..8 {
                acc[k] += t[k][bytes[k] as usize];
            }
        }
        weighed.push((acc.iter().sum(), chosen[i].0, chosen[i].1));
    }
    best(&mut weighed, n.weighed);

    // 3. The 8-bit values against the query's.
    let mut q8 = vec![0i8; dims];
    eight_bits(&q, &mut q8);
    let q8: Vec<i16> = q8.into_iter().map(i16::from).collect();
    // In segment and document order: the values are read front to back.
    weighed.sort_unstable_by_key(|(_, ord, doc)| (*ord, *doc));
    // Plain loops, not closures: a closure is a function of its own, compiled without the
    // features of the function it is written in unless it is inlined.
    let mut eight: Vec<(f32, u32, u32)> = Vec::with_capacity(weighed.len());
    for (i, &(_, ord, doc)) in weighed.iter().enumerate() {
        if let Some((c, d)) = weighed.get(i + AHEAD).and_then(|x| code((x.1, x.2))) {
            prefetch(c.values(d));
        }
        let Some(c) = all[ord as usize].as_ref() else {
            continue;
        };
        let d = doc as usize;
        let mut dot = 0i32;
        for (v, q) in c.values(d).iter().zip(&q8) {
            dot += i32::from(*v as i8 as i16 * *q);
        }
        eight.push((dot as f32 * c.scale(d) * c.inv_norm(d), ord, doc));
    }
    best(&mut eight, n.exact.max(depth));
    Some(eight)
}

/// How many documents ahead the scans of scattered documents ask for their bytes.
const AHEAD: usize = 8;

/// Asks for the cache lines of `bytes` (a hint: nothing is read that the program sees).
#[inline(always)]
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes
        .chunks(64)
        .map(|c| c.as_ptr())
        .chain(bytes.last().map(|b| b as *const u8))
    {
        // SAFETY: a prefetch reads nothing into the program and does not fault; the addresses
        // are in `bytes` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line as *const i8)
        };
    }
}

/// Keeps the `n` highest-scored entries of `v` (in no order).
fn best(v: &mut Vec<(f32, u32, u32)>, n: usize) {
    if v.len() > n {
        v.select_nth_unstable_by(n, |a, b| b.0.total_cmp(&a.0));
        v.truncate(n);
    }
}

/// Each document's Hamming distance to the query's signs (`u16::MAX`: no vector); inlined
/// into [`candidates`]' builds (with POPCNT, `count_ones` is one instruction; the baseline
/// x86-64 target has none).
#[inline(always)]
fn hamming_all(c: &Codes, q: &[u64]) -> Vec<u16> {
    let mut out = Vec::with_capacity(c.max_doc);
    for doc in 0..c.max_doc {
        if c.scale(doc) == 0.0 {
            out.push(u16::MAX);
            continue;
        }
        let mut d = 0u32;
        for (chunk, w) in c.signs(doc).chunks_exact(8).zip(q) {
            let x = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
            d += (x ^ w).count_ones();
        }
        out.push(d as u16);
    }
    out
}
