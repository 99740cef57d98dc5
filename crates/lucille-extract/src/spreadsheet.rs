//! Spreadsheets (XLSX, legacy XLS) with `calamine`: each sheet's name on a line, then its rows,
//! cells separated by tabs (as Tika's sheet output). Values are the cells' stored values
//! (numbers as numbers, formulas' cached results). ODS goes through `odf` instead (its
//! content.xml already holds the displayed text).

use std::io::Cursor;

use calamine::{Reader, Xls, Xlsx};

use super::{ExtractError, Format, TextBuf};

/// A sheet of a workbook that cannot be read: its name and the reader's error.
#[derive(Debug, thiserror::Error)]
#[error("sheet {name:?}: {source}")]
struct SheetError<E> {
    name: String,
    #[source]
    source: E,
}

pub(crate) fn extract(kind: Format, bytes: &[u8], out: &mut TextBuf) -> Result<(), ExtractError> {
    let fail = |e: String| ExtractError::new(kind.mime(), e);
    match kind {
        Format::Xls => {
            let mut book: Xls<_> = calamine::open_workbook_from_rs(Cursor::new(bytes))
                .map_err(|e| fail(format!("cannot open workbook: {e}")))?;
            write_sheets(&mut book, out).map_err(|e| fail(e.to_string()))
        }
        _ => {
            let mut book: Xlsx<_> = calamine::open_workbook_from_rs(Cursor::new(bytes))
                .map_err(|e| fail(format!("cannot open workbook: {e}")))?;
            write_sheets(&mut book, out).map_err(|e| fail(e.to_string()))
        }
    }
}

fn write_sheets<RS, R>(book: &mut R, out: &mut TextBuf) -> Result<(), SheetError<R::Error>>
where
    RS: std::io::Read + std::io::Seek,
    R: Reader<RS>,
    R::Error: std::error::Error + 'static,
{
    for name in book.sheet_names() {
        if out.full() {
            break;
        }
        let range = match book.worksheet_range(&name) {
            Ok(range) => range,
            Err(source) => return Err(SheetError { name, source }),
        };
        out.newline();
        out.push(&name);
        out.push("\n");
        for row in range.rows() {
            if out.full() {
                break;
            }
            let mut first = true;
            for cell in row {
                if !first {
                    out.push("\t");
                }
                first = false;
                if !matches!(cell, calamine::Data::Empty) {
                    out.push(&cell.to_string());
                }
            }
            out.push("\n");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sheet_error_message_is_exact() {
        let e = super::SheetError {
            name: "Q1".to_string(),
            source: std::io::Error::other("bad cell"),
        };
        assert_eq!(e.to_string(), "sheet \"Q1\": bad cell");
    }
}
