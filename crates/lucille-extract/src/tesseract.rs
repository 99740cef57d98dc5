//! Tesseract OCR through its C API, from Debian's `libtesseract` loaded at run time with
//! `libloading` (so building and `pip install .` need no system library; only a config that
//! uses OCR needs `apt-get install tesseract-ocr libtesseract-dev` or at least `libtesseract5`
//! and the language's `tesseract-ocr-LANG` data). Images are decoded with the `image` crate
//! (PNG, JPEG, TIFF) into 8-bit gray or RGB pixels handed to `TessBaseAPISetImage`.
//!
//! One [`Tesseract`] per stage instance (one per worker thread): a `TessBaseAPI` is not shared
//! between threads.

use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use libloading::Library;

use super::{OcrError, PageImage, PageOcr};

/// The library file names tried, newest first.
const LIBRARY_NAMES: [&str; 3] = ["libtesseract.so.5", "libtesseract.so.4", "libtesseract.so"];

/// Why libtesseract cannot be loaded.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// No library file could be opened: the error of the last name tried.
    #[error(transparent)]
    Library(#[from] libloading::Error),
    /// The library opened lacks a function of Tesseract's C API.
    #[error("{library}: {source}")]
    Symbol {
        library: &'static str,
        #[source]
        source: libloading::Error,
    },
}

pub const INSTALL_HINT: &str =
    "apt-get install tesseract-ocr libtesseract-dev (Debian / Ubuntu), plus tesseract-ocr-LANG for other languages";

type Create = unsafe extern "C" fn() -> *mut c_void;
type Init3 = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> c_int;
type SetImage = unsafe extern "C" fn(*mut c_void, *const c_uchar, c_int, c_int, c_int, c_int);
type SetInt = unsafe extern "C" fn(*mut c_void, c_int);
type GetText = unsafe extern "C" fn(*mut c_void) -> *mut c_char;
type DeleteText = unsafe extern "C" fn(*const c_char);
type Handle = unsafe extern "C" fn(*mut c_void);

/// The loaded library and its functions (loaded once per process).
struct Api {
    _lib: Library,
    create: Create,
    init3: Init3,
    set_image: SetImage,
    set_resolution: SetInt,
    set_psm: SetInt,
    get_text: GetText,
    delete_text: DeleteText,
    end: Handle,
    delete: Handle,
}

fn load() -> Result<Api, LoadError> {
    // SAFETY: loading libtesseract runs its (C++) static initialisers, which have no
    // preconditions.
    let open = |name: &'static str| (name, unsafe { Library::new(name) });
    // The first name that opens, else the error of the last one tried.
    let [first, rest @ ..] = LIBRARY_NAMES;
    let mut opened = open(first);
    for name in rest {
        if opened.1.is_ok() {
            break;
        }
        opened = open(name);
    }
    let (name, lib) = opened;
    let lib = lib?;
    // SAFETY: each symbol is looked up with the signature of Tesseract's C API
    // (tesseract/capi.h), unchanged since Tesseract 3.02.
    unsafe {
        macro_rules! sym {
            ($name:literal) => {
                *lib.get(concat!($name, "\0").as_bytes())
                    .map_err(|source| LoadError::Symbol {
                        library: name,
                        source,
                    })?
            };
        }
        Ok(Api {
            create: sym!("TessBaseAPICreate"),
            init3: sym!("TessBaseAPIInit3"),
            set_image: sym!("TessBaseAPISetImage"),
            set_resolution: sym!("TessBaseAPISetSourceResolution"),
            set_psm: sym!("TessBaseAPISetPageSegMode"),
            get_text: sym!("TessBaseAPIGetUTF8Text"),
            delete_text: sym!("TessDeleteText"),
            end: sym!("TessBaseAPIEnd"),
            delete: sym!("TessBaseAPIDelete"),
            _lib: lib,
        })
    }
}

fn api() -> Result<&'static Api, OcrError> {
    static API: OnceLock<Result<Api, LoadError>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|e| {
        OcrError::Unavailable(format!(
            "Tesseract's library (libtesseract) cannot be loaded ({e}); install it: {INSTALL_HINT}"
        ))
    })
}

/// Whether libtesseract can be loaded here.
pub fn available() -> bool {
    api().is_ok()
}

/// A rectangle of an image, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

/// One initialised Tesseract engine for one language (`eng`, `deu+eng`, ...).
pub struct Tesseract {
    api: &'static Api,
    handle: *mut c_void,
}

// SAFETY: a TessBaseAPI may move between threads; it is only never used by two at once, which
// `&mut self` / single ownership guarantee (one instance per stage, one stage per worker).
unsafe impl Send for Tesseract {}

impl Tesseract {
    /// Loads the library and the language's model; `Err` says what to install.
    pub fn new(lang: &str) -> Result<Tesseract, OcrError> {
        let api = api()?;
        let lang_c = CString::new(lang)
            .map_err(|_| OcrError::Unavailable(format!("language {lang:?} contains a NUL byte")))?;
        // SAFETY: TessBaseAPICreate has no preconditions; the handle is deleted in Drop.
        let handle = unsafe { (api.create)() };
        if handle.is_null() {
            return Err(OcrError::Unavailable(
                "TessBaseAPICreate returned nothing".into(),
            ));
        }
        let engine = Tesseract { api, handle };
        // SAFETY: a live handle; NULL datapath means Tesseract's default (TESSDATA_PREFIX or
        // the distribution's tessdata folder); lang_c outlives the call.
        let rc = unsafe { (api.init3)(handle, std::ptr::null(), lang_c.as_ptr()) };
        if rc != 0 {
            return Err(OcrError::Unavailable(format!(
                "Tesseract has no model for language {lang:?} (install tesseract-ocr-{lang} or set TESSDATA_PREFIX)"
            )));
        }
        // SAFETY: live, initialised handle. Page segmentation 3 (automatic, Tesseract's
        // default) suits whole pages; Lucille uses 4 (one column) for its rendered pages.
        unsafe { (api.set_psm)(handle, 3) };
        Ok(engine)
    }

    /// Recognises an image's text (the whole image, or each rectangle in turn).
    pub fn recognise(
        &mut self,
        image: PageImage<'_>,
        rects: &[Rect],
    ) -> Result<Vec<String>, OcrError> {
        let (width, height, channels, data) = match image {
            PageImage::Encoded(bytes) => decode(bytes)?,
            PageImage::Raw {
                width,
                height,
                channels,
                data,
            } => (width, height, channels, data),
        };
        let (Ok(w), Ok(h)) = (c_int::try_from(width), c_int::try_from(height)) else {
            return Err(OcrError::Image("image too large".into()));
        };
        let bpp = c_int::from(channels);
        let expected = width as usize * height as usize * usize::from(channels);
        if data.len() < expected || w == 0 || h == 0 {
            return Err(OcrError::Image(format!(
                "image data is short or empty ({width}x{height})"
            )));
        }
        if rects.is_empty() {
            return Ok(vec![self.recognise_pixels(&data, w, h, bpp)?]);
        }
        let mut out = Vec::new();
        for r in rects {
            // Clipped to the image (a region past its edge reads what is inside), and cut out
            // of the pixels: each region is recognised as an image of its own.
            let x = r.x.clamp(0, w);
            let y = r.y.clamp(0, h);
            let rw = r.width.clamp(0, w - x);
            let rh = r.height.clamp(0, h - y);
            if rw == 0 || rh == 0 {
                out.push(String::new());
                continue;
            }
            let (x, y, rw, rh, stride) = (
                x as usize,
                y as usize,
                rw as usize,
                rh as usize,
                w as usize * channels as usize,
            );
            let px = usize::from(channels);
            let mut crop = Vec::with_capacity(rw * rh * px);
            for row in y..y + rh {
                let start = row * stride + x * px;
                crop.extend_from_slice(&data[start..start + rw * px]);
            }
            out.push(self.recognise_pixels(&crop, rw as c_int, rh as c_int, bpp)?);
        }
        Ok(out)
    }

    fn recognise_pixels(
        &mut self,
        data: &[u8],
        w: c_int,
        h: c_int,
        bpp: c_int,
    ) -> Result<String, OcrError> {
        // SAFETY: `data` holds `h` rows of `w * bpp` bytes (checked by the caller) and stays
        // borrowed until after GetUTF8Text, the last use of the image by Tesseract here.
        unsafe {
            (self.api.set_image)(self.handle, data.as_ptr(), w, h, bpp, w * bpp);
            (self.api.set_resolution)(self.handle, 300);
        }
        self.text()
    }

    fn text(&mut self) -> Result<String, OcrError> {
        // SAFETY: live handle with an image set; the returned string is freed with
        // TessDeleteText, as the C API requires.
        unsafe {
            let p = (self.api.get_text)(self.handle);
            if p.is_null() {
                return Err(OcrError::Recognize(
                    "Tesseract recognised nothing (GetUTF8Text failed)".into(),
                ));
            }
            let text = CStr::from_ptr(p).to_string_lossy().into_owned();
            (self.api.delete_text)(p);
            Ok(text)
        }
    }
}

impl Drop for Tesseract {
    fn drop(&mut self) {
        // SAFETY: the handle was created by TessBaseAPICreate and is ended and deleted once.
        unsafe {
            (self.api.end)(self.handle);
            (self.api.delete)(self.handle);
        }
    }
}

/// Decodes PNG / JPEG / TIFF into 8-bit gray or RGB rows.
fn decode(bytes: &[u8]) -> Result<(u32, u32, u8, Vec<u8>), OcrError> {
    let img = image::load_from_memory(bytes)
        .map_err(|e| OcrError::Image(format!("cannot decode image: {e}")))?;
    let (w, h) = (img.width(), img.height());
    if img.color().has_color() {
        Ok((w, h, 3, img.into_rgb8().into_raw()))
    } else {
        Ok((w, h, 1, img.into_luma8().into_raw()))
    }
}

/// A [`PageOcr`] for extraction (TextExtractor's `ocrLang`): the engine behind a mutex, as
/// extraction takes it by shared reference.
pub struct SharedOcr(pub Arc<parking_lot::Mutex<Tesseract>>);

impl PageOcr for SharedOcr {
    fn ocr(&self, image: PageImage<'_>) -> Result<String, OcrError> {
        let mut t = self.0.lock();
        Ok(t.recognise(image, &[])?.concat())
    }
}
