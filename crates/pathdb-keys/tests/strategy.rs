//! proptest strategies: paths of mixed types and depths whose values cluster on the edge cases
//! (bytes 00/01/02/ff, integer extremes, escape characters, long strings) and on each other, so
//! that pairs often share prefixes.

use pathdb_keys::{Element, Id, Int, KeyPath, Namespace, SegmentType, Uuid};
use proptest::prelude::*;

pub fn namespace() -> impl Strategy<Value = Namespace> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "ab", "user", "post", "A", "_", "x_1"]).prop_map(str::to_owned),
        1 => "[A-Za-z_][A-Za-z0-9_]{0,12}",
        1 => Just("n".repeat(64)),
    ]
    .prop_map(|s| Namespace::new(&s).expect("strategy makes valid namespaces"))
}

fn int() -> impl Strategy<Value = Int> {
    let edges = vec![
        Int::MIN.get(),
        Int::MIN.get() + 1,
        -(1i128 << 56),
        -(1i128 << 56) + 1,
        -257,
        -256,
        -255,
        -1,
        0,
        1,
        255,
        256,
        1 << 56,
        (1 << 56) - 1,
        Int::MAX.get() - 1,
        Int::MAX.get(),
    ];
    prop_oneof![
        2 => prop::sample::select(edges),
        2 => -300i128..300,
        1 => Int::MIN.get()..=Int::MAX.get(),
    ]
    .prop_map(|v| Int::new(v).expect("in range"))
}

fn byte_values() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![3 => prop::sample::select(vec![0u8, 1, 2, 3, 0x61, 0xfe, 0xff]), 1 => any::<u8>()];
    prop::collection::vec(byte, 1..12)
}

fn string_value() -> impl Strategy<Value = String> {
    let ch = prop::sample::select(vec![
        'a',
        'b',
        '/',
        '%',
        '~',
        '!',
        '-',
        '0',
        '1',
        'é',
        '😀',
        ' ',
        '\u{80}',
        '\u{10ffff}',
    ]);
    prop_oneof![
        6 => prop::collection::vec(ch, 1..8).prop_map(|v| v.into_iter().collect()),
        1 => "[0-9]{1,4}",
        1 => "-[0-9]{1,3}",
        1 => Just("4c9d36e5-6b19-4e6a-828c-226ed667458a".to_owned()),
        1 => "\\PC{100,300}",
    ]
    .prop_filter("strings hold no control characters", |s: &String| {
        !s.is_empty() && !s.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f)
    })
}

fn uuid() -> impl Strategy<Value = Uuid> {
    prop_oneof![
        prop::sample::select(vec![
            Uuid::nil(),
            Uuid::max(),
            Uuid::from_u128(0x4c9d36e5_6b19_4e6a_828c_226ed667458a)
        ]),
        any::<[u8; 16]>().prop_map(Uuid::from_bytes),
        prop::array::uniform16(prop::sample::select(vec![0u8, 1, 2, 0x41]))
            .prop_map(Uuid::from_bytes),
    ]
}

pub fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        4 => int().prop_map(Id::Int),
        4 => string_value().prop_map(Id::String),
        1 => uuid().prop_map(Id::Uuid),
        1 => byte_values().prop_map(Id::Bytes),
        1 => int().prop_map(Id::DescInt),
        1 => string_value().prop_map(Id::DescString),
        1 => byte_values().prop_map(Id::DescBytes),
    ]
}

fn element_with_id() -> impl Strategy<Value = Element> {
    (namespace(), id()).prop_map(|(ns, id)| Element::new(ns, Some(id)).expect("valid id"))
}

/// A valid path: 1..=6 elements, the last one sometimes without id.
pub fn path() -> impl Strategy<Value = KeyPath> {
    (
        prop::collection::vec(element_with_id(), 1..6),
        any::<bool>(),
        namespace(),
    )
        .prop_map(|(mut elements, bare_last, ns)| {
            if bare_last {
                elements.push(Element::new(ns, None).expect("no id is valid"));
            }
            KeyPath::from_elements(elements).expect("strategy makes valid paths")
        })
}

/// An id of one type: siblings of the same type are where order bugs hide.
fn id_of(ty: SegmentType) -> BoxedStrategy<Id> {
    match ty {
        SegmentType::Int => int().prop_map(Id::Int).boxed(),
        SegmentType::DescInt => int().prop_map(Id::DescInt).boxed(),
        SegmentType::String => string_value().prop_map(Id::String).boxed(),
        SegmentType::DescString => string_value().prop_map(Id::DescString).boxed(),
        SegmentType::Bytes => byte_values().prop_map(Id::Bytes).boxed(),
        SegmentType::DescBytes => byte_values().prop_map(Id::DescBytes).boxed(),
        SegmentType::Uuid => uuid().prop_map(Id::Uuid).boxed(),
    }
}

/// How the second path of a pair relates to the first.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// An ancestor (or the path itself).
    Prefix,
    /// Same elements up to k, then a sibling at k (same namespace, usually same id type), then more.
    Sibling,
    /// Same elements up to k, then the element at k with its id extended (`ab` -> `ab\0`).
    Extended,
    /// Same elements up to k, then an element without id: a namespace-wide prefix.
    Bare,
    /// Same elements up to k, then an unrelated tail.
    Tail,
}

/// Two paths that diverge at a chosen element in a chosen way, so that ancestors, descendants,
/// siblings of one type and namespace-wide prefixes all occur often.
pub fn related_pair() -> impl Strategy<Value = (KeyPath, KeyPath)> {
    (path(), any::<prop::sample::Index>())
        .prop_flat_map(|(a, k)| {
            // Keep `a[..k]` extendable: every kept element has an id.
            let mut k = k.index(a.len() + 1);
            if k == a.len() && a.last().id().is_none() {
                k -= 1;
            }
            let ty = a
                .elements()
                .get(k)
                .and_then(Element::id)
                .map_or(SegmentType::Int, Id::segment_type);
            let shape = prop::sample::select(vec![
                Shape::Prefix,
                Shape::Sibling,
                Shape::Sibling,
                Shape::Extended,
                Shape::Bare,
                Shape::Tail,
            ]);
            (
                Just(a),
                Just(k),
                shape,
                prop_oneof![3 => id_of(ty), 1 => id()],
                any::<bool>(),
                path(),
                byte_values(),
            )
        })
        .prop_map(|(a, k, shape, new_id, same_ns, tail, extra)| {
            let mut elements: Vec<Element> = a.elements()[..k].to_vec();
            let ns_here = match a.elements().get(k) {
                Some(e) if same_ns => e.namespace().clone(),
                _ => tail.group().namespace().clone(),
            };
            match shape {
                Shape::Prefix => {}
                Shape::Sibling => {
                    elements.push(Element::new(ns_here, Some(new_id)).expect("valid id"));
                    elements.extend(tail.elements()[1..].iter().cloned());
                }
                Shape::Extended => match a.elements().get(k) {
                    Some(e) => {
                        let id = e.id().map(|id| extend(id, &extra));
                        elements.push(
                            Element::new(e.namespace().clone(), id)
                                .expect("extended ids stay valid"),
                        );
                        elements.extend(
                            tail.elements()[1..]
                                .iter()
                                .take(usize::from(e.id().is_some()) * 2)
                                .cloned(),
                        );
                    }
                    None => elements.extend(tail.elements().iter().cloned()),
                },
                Shape::Bare if k > 0 => {
                    elements.push(Element::new(ns_here, None).expect("no id is valid"))
                }
                Shape::Bare | Shape::Tail => elements.extend(tail.elements().iter().cloned()),
            }
            if elements.is_empty() {
                elements = tail.elements().to_vec();
            }
            let b = KeyPath::from_elements(elements).expect("prefix elements all have ids");
            (a, b)
        })
}

/// The id with `extra` appended to its value (integers and UUIDs, which are fixed-width in their
/// encoding, get a new value instead).
fn extend(id: &Id, extra: &[u8]) -> Id {
    let text: String = extra.iter().map(|&b| char::from(b'a' + b % 26)).collect();
    match id {
        Id::Bytes(b) => Id::Bytes([b.as_slice(), extra].concat()),
        Id::DescBytes(b) => Id::DescBytes([b.as_slice(), extra].concat()),
        Id::String(s) => Id::String(format!("{s}{text}")),
        Id::DescString(s) => Id::DescString(format!("{s}{text}")),
        Id::Int(v) => Id::Int(Int::from(v.magnitude() / 256)),
        Id::DescInt(v) => Id::DescInt(Int::from(v.magnitude() / 256)),
        Id::Uuid(u) => Id::Uuid(Uuid::from_u128(u.as_u128() ^ u128::from(extra[0]))),
    }
}
