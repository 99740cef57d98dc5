//! ApplyOCR (Lucille's `com.kmwllc.lucille.ocr.stage.ApplyOCR`): recognises the text of an
//! image file, or of each page of a PDF, with Tesseract (Debian's libtesseract, loaded at run
//! time: `lucille_extract::tesseract`).
//!
//! Keys (Lucille's): `lang` (required, Tesseract's language code such as `eng` or `deu+eng`);
//! `pathField` (required: the field holding the file's path; a document without it is left
//! alone); `extractAllDest` (the whole image's text; for a PDF one value per page, the field
//! multi-valued); `extractionTemplates` (`[{ name, regions: [{ x, y, width, height, dest }] }]`:
//! rectangles, in pixels, whose text goes to `dest`, appended when `dest` already has a value);
//! `pages` (`{ pageNumber: templateName }`; page 0 is the only page of an image) and `pagesField`
//! (a field holding that map as JSON, taking precedence per page); `pages` / `pagesField` need
//! `extractionTemplates`.
//!
//! The file's type is detected from its content (PNG, JPEG, TIFF images; PDF). A missing
//! library or language model is a config error at validation saying what to install.
//!
//! Differences from Lucille: a PDF page is not rendered (that would need a PDF renderer, a C++
//! library); its embedded images are recognised (a scanned page is one image), so template
//! regions are in the page image's pixels rather than a 300 DPI rendering. Pages are numbered
//! from 0 for `pages`, as Lucille's. An unreadable file or image FAILs the document.

use std::collections::HashMap;
use std::num::ParseIntError;

use serde_json::{Map, Value};

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;
use lucille_extract::tesseract::{Rect, Tesseract};
use lucille_extract::{detect, Format, PageImage};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyOCR",
    spec: ApplyOcrOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Recognises the text of an image file, or of each page of a PDF, with Tesseract: the whole
/// text, and the text of template regions into fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ApplyOcrOptions {
    /// Tesseract's language code, e.g. eng or deu+eng.
    lang: String,
    /// The field holding the file's path; a document without it is left alone.
    path_field: String,
    /// The field that gets the whole image's text (for a PDF one value per page).
    extract_all_dest: Option<String>,
    /// Named templates: [{ name, regions: [{ x, y, width, height, dest }] }], rectangles in
    /// pixels whose text goes to dest (appended when it has a value).
    extraction_templates: Option<Vec<Map<String, Value>>>,
    /// { pageNumber: templateName }: the template applied to each page (page 0 is an image's
    /// only page); needs extractionTemplates.
    pages: Option<Map<String, Value>>,
    /// A field holding a pages map as JSON, taking precedence per page; needs
    /// extractionTemplates.
    pages_field: Option<String>,
}

struct Region {
    rect: Rect,
    dest: String,
}

struct ApplyOcr {
    engine: Tesseract,
    path_field: String,
    extract_all: Option<String>,
    templates: HashMap<String, Vec<Region>>,
    pages: HashMap<u32, String>,
    pages_field: Option<String>,
}

/// The `extractionTemplates` list (`config` names its entries' keys in errors).
fn templates(
    config: &ComponentConfig,
    list: &[Map<String, Value>],
) -> Result<HashMap<String, Vec<Region>>, ConfigError> {
    let mut out = HashMap::new();
    for (i, t) in list.iter().enumerate() {
        let at = |k: &str| format!("extractionTemplates[{i}].{k}");
        let name = t
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| config.error(&at("name"), "is required (a string)"))?;
        let regions = t
            .get("regions")
            .and_then(Value::as_array)
            .ok_or_else(|| config.error(&at("regions"), "is required (a list of regions)"))?;
        let mut parsed = Vec::new();
        for (j, r) in regions.iter().enumerate() {
            let num = |k: &str| -> Result<i32, ConfigError> {
                r.get(k)
                    .and_then(Value::as_i64)
                    .and_then(|v| i32::try_from(v).ok())
                    .filter(|v| *v >= 0)
                    .ok_or_else(|| {
                        config.error(
                            &format!("extractionTemplates[{i}].regions[{j}].{k}"),
                            "is required (a number of pixels, 0 or more)",
                        )
                    })
            };
            let dest = r.get("dest").and_then(Value::as_str).ok_or_else(|| {
                config.error(
                    &format!("extractionTemplates[{i}].regions[{j}].dest"),
                    "is required (a field name)",
                )
            })?;
            parsed.push(Region {
                rect: Rect {
                    x: num("x")?,
                    y: num("y")?,
                    width: num("width")?,
                    height: num("height")?,
                },
                dest: dest.to_string(),
            });
        }
        out.insert(name.to_string(), parsed);
    }
    Ok(out)
}

/// A `pages` map (or a `pagesField` value) entry that names no page or no template.
#[derive(Debug, thiserror::Error)]
enum PageMapError {
    #[error("page {page:?} is not a page number")]
    NotANumber {
        page: String,
        #[source]
        source: ParseIntError,
    },
    #[error("page {page}: the template name must be a string")]
    NotAName { page: String },
}

/// A `{ pageNumber: templateName }` map.
fn page_map(map: &Map<String, Value>) -> Result<HashMap<u32, String>, PageMapError> {
    map.iter()
        .map(|(k, v)| {
            let page = k
                .trim()
                .parse::<u32>()
                .map_err(|source| PageMapError::NotANumber {
                    page: k.clone(),
                    source,
                })?;
            let name = v
                .as_str()
                .ok_or_else(|| PageMapError::NotAName { page: k.clone() })?;
            Ok((page, name.to_string()))
        })
        .collect()
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ApplyOcrOptions::from_config(config)?;
    let mut errors = Vec::new();
    let templates = match &o.extraction_templates {
        Some(list) => templates(config, list).unwrap_or_else(|e| {
            errors.push(e);
            HashMap::new()
        }),
        None => HashMap::new(),
    };
    let pages = match &o.pages {
        Some(map) => page_map(map).unwrap_or_else(|e| {
            errors.push(config.error("pages", e.to_string()));
            HashMap::new()
        }),
        None => HashMap::new(),
    };
    if (o.pages.is_some() || o.pages_field.is_some()) && o.extraction_templates.is_none() {
        errors.push(config.error(
            "extractionTemplates",
            "must be given when pages or pagesField is",
        ));
    } else if let Some(name) = pages.values().find(|n| !templates.contains_key(*n)) {
        errors.push(config.error(
            "pages",
            format!("names template {name:?}, which extractionTemplates does not define"),
        ));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let engine = Tesseract::new(&o.lang).map_err(|e| config.error("lang", e.to_string()))?;
    Ok(Box::new(ApplyOcr {
        engine,
        path_field: o.path_field,
        extract_all: o.extract_all_dest,
        templates,
        pages,
        pages_field: o.pages_field,
    }))
}

impl ApplyOcr {
    /// The template for a page: the document's `pagesField` map first, then `pages`.
    fn template_for(
        &self,
        page: u32,
        dynamic: &HashMap<u32, String>,
    ) -> Result<Option<&Vec<Region>>, StageFailure> {
        let Some(name) = dynamic.get(&page).or_else(|| self.pages.get(&page)) else {
            return Ok(None);
        };
        self.templates
            .get(name)
            .map(Some)
            .ok_or_else(|| StageFailure::msg(format!("page {page}: no template named {name:?}")))
    }

    fn page(
        &mut self,
        doc: &mut Document,
        number: u32,
        image: PageImage<'_>,
        dynamic: &HashMap<u32, String>,
    ) -> Result<(), StageFailure> {
        let regions: Vec<(Rect, String)> = self
            .template_for(number, dynamic)?
            .map(|t| t.iter().map(|r| (r.rect, r.dest.clone())).collect())
            .unwrap_or_default();
        let mut rects: Vec<Rect> = regions.iter().map(|(r, _)| *r).collect();
        let whole = self.extract_all.is_some();
        if whole {
            // The whole image first: a rectangle covering everything.
            rects.insert(
                0,
                Rect {
                    x: 0,
                    y: 0,
                    width: i32::MAX / 2,
                    height: i32::MAX / 2,
                },
            );
        }
        if rects.is_empty() {
            return Ok(());
        }
        let texts = self
            .engine
            .recognise(image, &rects)
            .map_err(|e| StageFailure::msg(format!("OCR of page {number}: {e}")))?;
        let mut texts = texts.into_iter();
        if let Some(dest) = &self.extract_all {
            if let Some(t) = texts.next() {
                doc.set_or_add(dest, Value::String(t.trim_end().to_string()))?;
            }
        }
        for ((_, dest), t) in regions.iter().zip(texts) {
            doc.set_or_add(dest, Value::String(t.trim().to_string()))?;
        }
        Ok(())
    }
}

impl Stage for ApplyOcr {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some(path) = doc.get_string(&self.path_field)? else {
            return Ok(None);
        };
        let bytes = std::fs::read(&path).map_err(|e| {
            StageFailure::msg(format!(
                "cannot read {path:?} (field {:?} of document {:?}): {e}",
                self.path_field,
                doc.id()
            ))
        })?;
        let dynamic = match &self.pages_field {
            Some(f) => match doc.get_string(f)? {
                Some(json) => {
                    let map: Map<String, Value> = serde_json::from_str(&json).map_err(|e| {
                        StageFailure::msg(format!("field {f:?} is not a JSON object: {e}"))
                    })?;
                    page_map(&map).map_err(|e| StageFailure::msg(format!("field {f:?}: {e}")))?
                }
                None => HashMap::new(),
            },
            None => HashMap::new(),
        };
        match detect(&bytes) {
            Format::Pdf => {
                let pdf = lucille_extract::pdf::load(&bytes)
                    .map_err(|e| StageFailure::msg(format!("{path}: {e}")))?;
                for (i, (_, page_id)) in pdf.get_pages().into_iter().enumerate() {
                    let number = u32::try_from(i).unwrap_or(u32::MAX);
                    let images = lucille_extract::pdf::page_images(&pdf, page_id)
                        .map_err(|e| StageFailure::msg(format!("{path}: page {number}: {e}")))?;
                    // A scanned page is one image; the largest stands for the page.
                    let Some(image) = images.into_iter().max_by_key(|im| match im {
                        PageImage::Encoded(b) => b.len(),
                        PageImage::Raw { data, .. } => data.len(),
                    }) else {
                        if let Some(dest) = &self.extract_all {
                            doc.set_or_add(dest, Value::String(String::new()))?;
                        }
                        continue;
                    };
                    self.page(doc, number, image, &dynamic)?;
                }
            }
            Format::Image(_) => self.page(doc, 0, PageImage::Encoded(&bytes), &dynamic)?,
            other => {
                return Err(StageFailure::msg(format!(
                    "{path}: not an image or PDF ({})",
                    other.mime()
                )))
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::page_map;

    #[test]
    fn page_maps_name_the_bad_entry() {
        let map = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let pages = page_map(&map(json!({"0": "form", " 2 ": "back"}))).unwrap();
        assert_eq!(pages.get(&0).map(String::as_str), Some("form"));
        assert_eq!(pages.get(&2).map(String::as_str), Some("back"));
        assert_eq!(
            page_map(&map(json!({"first": "form"})))
                .unwrap_err()
                .to_string(),
            "page \"first\" is not a page number"
        );
        assert_eq!(
            page_map(&map(json!({"1": 3}))).unwrap_err().to_string(),
            "page 1: the template name must be a string"
        );
    }
}
