//! RTF, by a small hand-written reader. The RTF crates on crates.io either build a full
//! document model (slow, and they reject some of what Word and LibreOffice write) or are
//! unmaintained; text extraction needs only the token rules of the RTF 1.9 spec: groups,
//! control words and symbols, `\'hh` bytes in the document's code page (`\ansicpgN`),
//! `\uN` with its `\ucN` fallback characters skipped, `\binN` data skipped, and the
//! destinations that hold no body text (font and colour tables, style sheets, pictures,
//! objects, field instructions, every `\*` destination) dropped. `\info`'s `\title`,
//! `\author`, `\creatim` and `\revtim` become metadata.

use super::{ExtractError, Metadata, TextBuf, CREATED, CREATOR, MODIFIED, TITLE};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dest {
    Text,
    Skip,
    Info,
    Title,
    Author,
    Created,
    Modified,
}

#[derive(Clone, Copy)]
struct State {
    dest: Dest,
    uc: usize,
    /// No control word seen yet in this group (the first one names a destination).
    first: bool,
}

const SKIPPED: &[&str] = &[
    "fonttbl",
    "colortbl",
    "stylesheet",
    "pict",
    "object",
    "listtable",
    "listoverridetable",
    "rsidtbl",
    "generator",
    "themedata",
    "colorschememapping",
    "datastore",
    "latentstyles",
    "xmlnstbl",
    "filetbl",
    "revtbl",
    "fldinst",
    "pgdsctbl",
    "mmathPr",
    "objdata",
    "nonshppict",
    "bkmkstart",
    "bkmkend",
    "comment",
    "doccomm",
    "operator",
    "keywords",
    "subject",
    "company",
    "manager",
    "category",
    "printim",
    "buptim",
];

struct Date {
    parts: [u32; 5],
}

impl Date {
    fn iso(&self) -> Option<String> {
        let [y, mo, d, h, mi] = self.parts;
        if y == 0 {
            return None;
        }
        Some(format!(
            "{y:04}-{:02}-{:02}T{h:02}:{mi:02}:00",
            mo.max(1),
            d.max(1)
        ))
    }
}

struct Reader<'o> {
    out: &'o mut TextBuf,
    encoding: &'static encoding_rs::Encoding,
    pending: Vec<u8>,
    pending_dest: Dest,
    title: String,
    author: String,
    created: Date,
    modified: Date,
}

impl Reader<'_> {
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let text = self
            .encoding
            .decode_without_bom_handling(&self.pending)
            .0
            .into_owned();
        self.pending.clear();
        self.route(self.pending_dest, &text);
    }

    fn route(&mut self, dest: Dest, text: &str) {
        match dest {
            Dest::Text => self.out.push(text),
            Dest::Title => self.title.push_str(text),
            Dest::Author => self.author.push_str(text),
            _ => {}
        }
    }

    fn byte(&mut self, dest: Dest, b: u8) {
        if dest != self.pending_dest {
            self.flush();
            self.pending_dest = dest;
        }
        self.pending.push(b);
    }

    fn text(&mut self, dest: Dest, s: &str) {
        self.flush();
        self.route(dest, s);
    }
}

pub(crate) fn extract(
    bytes: &[u8],
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let mut r = Reader {
        out,
        encoding: encoding_rs::WINDOWS_1252,
        pending: Vec::new(),
        pending_dest: Dest::Text,
        title: String::new(),
        author: String::new(),
        created: Date { parts: [0; 5] },
        modified: Date { parts: [0; 5] },
    };
    let mut stack = vec![State {
        dest: Dest::Text,
        uc: 1,
        first: true,
    }];
    // Fallback characters still to skip after a \uN.
    let mut skip = 0usize;
    let mut i = 0;
    let n = bytes.len();
    while i < n && !r.out.full() {
        let Some(top) = stack.last().copied() else {
            break;
        };
        match bytes[i] {
            b'{' => {
                r.flush();
                stack.push(State { first: true, ..top });
                skip = 0;
                i += 1;
            }
            b'}' => {
                r.flush();
                stack.pop();
                skip = 0;
                i += 1;
            }
            b'\r' | b'\n' => i += 1,
            b'\\' if i + 1 < n => {
                let c = bytes[i + 1];
                if c.is_ascii_alphabetic() {
                    let start = i + 1;
                    let mut j = start;
                    while j < n && j - start < 32 && bytes[j].is_ascii_alphabetic() {
                        j += 1;
                    }
                    let word = std::str::from_utf8(&bytes[start..j]).unwrap_or("");
                    let pstart = j;
                    if j < n && bytes[j] == b'-' {
                        j += 1;
                    }
                    while j < n && j - pstart < 11 && bytes[j].is_ascii_digit() {
                        j += 1;
                    }
                    let param: Option<i64> = std::str::from_utf8(&bytes[pstart..j])
                        .ok()
                        .and_then(|p| p.parse().ok());
                    if j < n && bytes[j] == b' ' {
                        j += 1;
                    }
                    i = j;
                    if word == "bin" {
                        let len = usize::try_from(param.unwrap_or(0)).unwrap_or(0);
                        i = i.saturating_add(len);
                        continue;
                    }
                    let was_first = top.first;
                    if let Some(s) = stack.last_mut() {
                        s.first = false;
                    }
                    if skip > 0 && !matches!(word, "par" | "line" | "tab") {
                        // A control word counts as one fallback character.
                        skip -= 1;
                        continue;
                    }
                    control_word(&mut r, &mut stack, &mut skip, word, param, was_first);
                } else {
                    i += 2;
                    if skip > 0 && c != b'\'' {
                        skip -= 1;
                        continue;
                    }
                    match c {
                        b'\'' => {
                            let hex = bytes
                                .get(i..i + 2)
                                .and_then(|h| std::str::from_utf8(h).ok());
                            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                                i += 2;
                                if skip > 0 {
                                    skip -= 1;
                                } else {
                                    r.byte(top.dest, v);
                                }
                            }
                        }
                        b'*' => {
                            r.flush();
                            if let Some(s) = stack.last_mut() {
                                s.dest = Dest::Skip;
                            }
                        }
                        b'\\' | b'{' | b'}' => r.byte(top.dest, c),
                        b'~' => r.text(top.dest, "\u{a0}"),
                        b'_' => r.text(top.dest, "-"),
                        b'\n' | b'\r' => r.text(top.dest, "\n"),
                        _ => {}
                    }
                }
            }
            b => {
                i += 1;
                if skip > 0 {
                    skip -= 1;
                } else {
                    r.byte(top.dest, b);
                }
            }
        }
    }
    r.flush();
    let title = r.title.trim().to_string();
    let author = r.author.trim().to_string();
    meta.set(TITLE, title);
    meta.set(CREATOR, author);
    if let Some(d) = r.created.iso() {
        meta.set(CREATED, d);
    }
    if let Some(d) = r.modified.iso() {
        meta.set(MODIFIED, d);
    }
    if stack.len() > 1 && !r.out.full() {
        tracing::debug!("RTF ends with {} group(s) open", stack.len() - 1);
    }
    Ok(())
}

fn control_word(
    r: &mut Reader<'_>,
    stack: &mut [State],
    skip: &mut usize,
    word: &str,
    param: Option<i64>,
    first: bool,
) {
    let Some(top) = stack.last_mut() else {
        return;
    };
    let dest = top.dest;
    if first {
        let new = match word {
            w if SKIPPED.contains(&w) => Some(Dest::Skip),
            "header" | "footer" | "headerl" | "headerr" | "headerf" | "footerl" | "footerr"
            | "footerf" | "footnote" => None,
            "info" => Some(Dest::Info),
            // A second \title / \author (LibreOffice writes the author twice) is dropped.
            "title" if dest == Dest::Info && r.title.is_empty() => Some(Dest::Title),
            "author" if dest == Dest::Info && r.author.is_empty() => Some(Dest::Author),
            "creatim" if dest == Dest::Info => Some(Dest::Created),
            "revtim" if dest == Dest::Info => Some(Dest::Modified),
            _ if dest == Dest::Info => Some(Dest::Skip),
            _ => None,
        };
        if let Some(d) = new {
            r.flush();
            top.dest = d;
            return;
        }
    }
    let dest = top.dest;
    match word {
        "ansicpg" => {
            if let Some(cp) = param {
                let label = match cp {
                    932 => "shift_jis".to_string(),
                    936 => "gbk".to_string(),
                    949 => "euc-kr".to_string(),
                    950 => "big5".to_string(),
                    65001 => "utf-8".to_string(),
                    other => format!("windows-{other}"),
                };
                if let Some(enc) = encoding_rs::Encoding::for_label(label.as_bytes()) {
                    r.flush();
                    r.encoding = enc;
                }
            }
        }
        "par" | "line" | "sect" | "page" | "row" if dest == Dest::Text => {
            r.flush();
            r.out.newline();
        }
        "tab" | "cell" => r.text(dest, "\t"),
        "u" => {
            if let Some(v) = param {
                let code = if v < 0 { v + 65536 } else { v };
                let c = u32::try_from(code)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                let mut b = [0u8; 4];
                r.text(dest, c.encode_utf8(&mut b));
                *skip = top.uc;
            }
        }
        "uc" => top.uc = usize::try_from(param.unwrap_or(1)).unwrap_or(1).min(8),
        "emdash" => r.text(dest, "\u{2014}"),
        "endash" => r.text(dest, "\u{2013}"),
        "bullet" => r.text(dest, "\u{2022}"),
        "lquote" => r.text(dest, "\u{2018}"),
        "rquote" => r.text(dest, "\u{2019}"),
        "ldblquote" => r.text(dest, "\u{201c}"),
        "rdblquote" => r.text(dest, "\u{201d}"),
        "emspace" | "enspace" | "qmspace" => r.text(dest, " "),
        "yr" | "mo" | "dy" | "hr" | "min" => {
            let date = match dest {
                Dest::Created => &mut r.created,
                Dest::Modified => &mut r.modified,
                _ => return,
            };
            let idx = match word {
                "yr" => 0,
                "mo" => 1,
                "dy" => 2,
                "hr" => 3,
                _ => 4,
            };
            date.parts[idx] = u32::try_from(param.unwrap_or(0)).unwrap_or(0);
        }
        _ => {}
    }
}
