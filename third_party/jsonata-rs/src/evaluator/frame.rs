use std::cell::RefCell;

use bumpalo::Bump;
use hashbrown::{DefaultHashBuilder, HashMap};

use super::value::Value;

/// A scope of variable bindings. Lucille patch: frames live in the evaluation's bump arena
/// (a `Copy` reference) instead of `Rc<RefCell<..>>`, so a frame captured by a lambda value
/// (which the arena never drops) no longer leaks its bindings and the `Rc` cycle.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a>(&'a FrameData<'a>);

impl<'a> Frame<'a> {
    pub fn new(arena: &'a Bump) -> Frame<'a> {
        Frame(arena.alloc(FrameData {
            bindings: RefCell::new(HashMap::new_in(arena)),
            parent: None,
            arena,
        }))
    }

    pub fn new_with_parent(parent: &Frame<'a>) -> Frame<'a> {
        let arena = parent.0.arena;
        Frame(arena.alloc(FrameData {
            bindings: RefCell::new(HashMap::new_in(arena)),
            parent: Some(*parent),
            arena,
        }))
    }

    pub fn from_tuple(parent: &Frame<'a>, tuple: &'a Value<'a>) -> Frame<'a> {
        let arena = parent.0.arena;
        // Lucille patch: a value that is not a tuple (an object) binds nothing (`entries`
        // panicked: a group-by over an empty tuple stream).
        let mut bindings = HashMap::new_in(arena);
        if let Value::Object(map) = tuple {
            bindings.reserve(map.len());
            for (key, value) in map.iter() {
                bindings.insert(&*arena.alloc_str(key), *value);
            }
        }

        Frame(arena.alloc(FrameData {
            bindings: RefCell::new(bindings),
            parent: Some(*parent),
            arena,
        }))
    }

    pub fn bind(&self, name: &str, value: &'a Value<'a>) {
        let mut bindings = self.0.bindings.borrow_mut();
        if let Some(slot) = bindings.get_mut(name) {
            *slot = value;
        } else {
            bindings.insert(&*self.0.arena.alloc_str(name), value);
        }
    }

    pub fn lookup(&self, name: &str) -> Option<&'a Value<'a>> {
        match self.0.bindings.borrow().get(name) {
            Some(value) => Some(*value),
            None => match &self.0.parent {
                Some(parent) => parent.lookup(name),
                None => None,
            },
        }
    }
}

#[derive(Debug)]
pub struct FrameData<'a> {
    bindings: RefCell<HashMap<&'a str, &'a Value<'a>, DefaultHashBuilder, &'a Bump>>,
    parent: Option<Frame<'a>>,
    arena: &'a Bump,
}

// #[cfg(test)]
// mod tests {
//     use super::*;

//     #[test]
//     fn bind() {
//         let frame = Frame::new();
//         frame.bind("a", Value::number(1));
//         let a = frame.lookup("a");
//         assert!(a.is_some());
//         assert_eq!(a.unwrap(), 1);
//     }

//     #[test]
//     fn lookup_through_parent() {
//         let parent = Frame::new();
//         parent.bind("a", &arena.number(1));
//         let frame = Frame::new_with_parent(&parent);
//         let a = frame.lookup("a");
//         assert!(a.is_some());
//         assert_eq!(a.unwrap(), 1);
//     }

//     #[test]
//     fn lookup_overriding_parent() {
//         let parent = Frame::new();
//         let arena = ValueArena::new();
//         parent.bind("a", arena.clone(), &arena.number(1));
//         let frame = Frame::new_with_parent(&parent);
//         frame.bind("a", arena.clone(), &arena.number(2));
//         let a = frame.lookup("a");
//         assert!(a.is_some());
//         assert_eq!(a.unwrap(), 2);
//     }
// }
