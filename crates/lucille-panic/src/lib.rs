//! The text of a caught panic's payload. Lucille-rs turns a panic in a stage, a backend, a
//! parser or the JSONata engine into an error (a FAIL for the document), never a crashed run;
//! every such place reports the panic's message through this one function.

use std::any::Any;

/// The message a panic was raised with (`panic!("...")` gives a `&str` or a `String`), or a
/// fixed text for any other payload.
pub fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::message;
    use std::panic::catch_unwind;

    #[test]
    fn text_payloads_are_read_and_others_named() {
        let literal = catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(message(literal.as_ref()), "plain");
        let formatted = catch_unwind(|| panic!("index {}", 3)).unwrap_err();
        assert_eq!(message(formatted.as_ref()), "index 3");
        let other = catch_unwind(|| std::panic::panic_any(7_u8)).unwrap_err();
        assert_eq!(message(other.as_ref()), "panic with a non-text payload");
    }
}
