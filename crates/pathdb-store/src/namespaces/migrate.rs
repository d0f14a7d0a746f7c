//! Migration steps between definition versions (docs/migrations.md). A definition may carry
//! the steps that turn values of the previous version into values of its own; every version
//! stays readable and writable because each step has an inverse:
//!
//! | step | forward (older to newer) | backward (newer to older) |
//! |---|---|---|
//! | `rename from to` | moves `from` to `to` | moves `to` back to `from` |
//! | `add path default` | sets `path` to `default` where it is missing | removes `path` |
//! | `remove path read_default` | removes `path` | sets `path` to `read_default` (if given) where it is missing |
//! | `rename_value path from to` | the string `from` at `path` becomes `to` | `to` becomes `from` |
//!
//! Paths are JSON pointers (RFC 6901) to object members, as deep as objects nest. A step
//! whose member's parent is missing or not an object does nothing (a rename of a missing
//! member is a no-op), except that a rename makes the objects its target needs, so that no
//! value is dropped. A value is read in version `a` by going forward from the version it is
//! stored at to the newest, then backward to `a` ([`Chain::translate_text`]): the same answer
//! whether or not the background rewrite (write/rewrite.rs) has brought the item forward yet.

use crate::model::error::Error;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// One migration step, as a definition declares it (`{"op": "rename", ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A member renamed: `{"op": "rename", "from": "/name", "to": "/full_name"}`.
    Rename {
        /// The member's pointer in the previous version.
        from: String,
        /// Its pointer in this version.
        to: String,
    },
    /// A member added, with the value older items get: `{"op": "add", "path": "/tier",
    /// "default": "free"}`.
    Add {
        /// The new member's pointer.
        path: String,
        /// What an item that lacks it gets (`null` is a value).
        default: Value,
    },
    /// A member removed: `{"op": "remove", "path": "/legacy", "read_default": 0}`.
    Remove {
        /// The removed member's pointer.
        path: String,
        /// What a reader of an older version sees where the member is missing; none: it
        /// stays missing.
        #[serde(
            default,
            deserialize_with = "crate::model::item::present",
            skip_serializing_if = "Option::is_none"
        )]
        read_default: Option<Value>,
    },
    /// A string value renamed (an enum's member): `{"op": "rename_value", "path":
    /// "/status", "from": "shipped", "to": "sent"}`.
    RenameValue {
        /// The member's pointer.
        path: String,
        /// The string in the previous version.
        from: String,
        /// The string in this version.
        to: String,
    },
}

/// A JSON pointer to an object member, split into its member names.
pub(crate) type Pointer = Vec<String>;

/// Parses a JSON pointer (RFC 6901) naming a member: `/a/b~1c` is `["a", "b/c"]`.
///
/// # Errors
/// [`Error::InvalidRequest`] for the empty pointer (the whole value), one that does not start
/// with `/`, or a `~` not followed by `0` or `1`.
pub(crate) fn parse_pointer(text: &str) -> Result<Pointer, Error> {
    let bad = |why: &str| Error::InvalidRequest(format!("JSON pointer {text:?}: {why}"));
    let Some(rest) = text.strip_prefix('/') else {
        return Err(bad(if text.is_empty() {
            "a step names a member, not the whole value"
        } else {
            "a pointer starts with `/`"
        }));
    };
    rest.split('/')
        .map(|segment| {
            let mut out = String::with_capacity(segment.len());
            let mut chars = segment.chars();
            while let Some(c) = chars.next() {
                match c {
                    '~' => match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return Err(bad("`~` is followed by `0` or `1`")),
                    },
                    c => out.push(c),
                }
            }
            Ok(out)
        })
        .collect()
}

/// A step with its pointers parsed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Compiled {
    Rename {
        from: Pointer,
        to: Pointer,
    },
    Add {
        path: Pointer,
        default: Value,
    },
    Remove {
        path: Pointer,
        read_default: Option<Value>,
    },
    RenameValue {
        path: Pointer,
        from: String,
        to: String,
    },
}

impl Step {
    /// The step with its pointers parsed.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`]: a bad pointer, a rename onto itself or into its own member,
    /// a value renamed to itself.
    pub(crate) fn compile(&self) -> Result<Compiled, Error> {
        Ok(match self {
            Step::Rename { from, to } => {
                let (from_p, to_p) = (parse_pointer(from)?, parse_pointer(to)?);
                if to_p.starts_with(&from_p) || from_p.starts_with(&to_p) {
                    return Err(Error::InvalidRequest(format!(
                        "rename from {from:?} to {to:?}: one contains the other"
                    )));
                }
                Compiled::Rename {
                    from: from_p,
                    to: to_p,
                }
            }
            Step::Add { path, default } => Compiled::Add {
                path: parse_pointer(path)?,
                default: default.clone(),
            },
            Step::Remove { path, read_default } => Compiled::Remove {
                path: parse_pointer(path)?,
                read_default: read_default.clone(),
            },
            Step::RenameValue { path, from, to } => {
                if from == to {
                    return Err(Error::InvalidRequest(format!(
                        "rename_value at {path:?} renames {from:?} to itself"
                    )));
                }
                Compiled::RenameValue {
                    path: parse_pointer(path)?,
                    from: from.clone(),
                    to: to.clone(),
                }
            }
        })
    }
}

/// Why a value could not be brought forward: a write in an older version whose value has
/// both a renamed member and its new name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict(pub(crate) String);

/// How a forward translation treats a rename onto a member that is there already.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum OnConflict {
    /// A write: refuse the value (422), nothing is lost silently.
    Refuse,
    /// A stored value being read or rewritten: the renamed member wins, so every read of an
    /// item answers the same.
    Replace,
}

impl Compiled {
    /// Applies the step to `value`, older to newer.
    fn forward(&self, value: &mut Value, on_conflict: OnConflict) -> Result<(), Conflict> {
        match self {
            Compiled::Rename { from, to } => {
                let Some(moved) = take(value, from) else {
                    return Ok(());
                };
                if on_conflict == OnConflict::Refuse && get(value, to).is_some() {
                    // Put it back: the caller reports the value as it was given.
                    put(value, from, moved, true);
                    return Err(Conflict(format!(
                        "the value has both {} and {}, which a rename makes one",
                        show(from),
                        show(to)
                    )));
                }
                put(value, to, moved, true);
            }
            Compiled::Add { path, default } => {
                if get(value, path).is_none() {
                    put(value, path, default.clone(), false);
                }
            }
            Compiled::Remove { path, .. } => {
                take(value, path);
            }
            Compiled::RenameValue { path, from, to } => rename_value(value, path, from, to),
        }
        Ok(())
    }

    /// Applies the step's inverse to `value`, newer to older.
    fn backward(&self, value: &mut Value) {
        match self {
            Compiled::Rename { from, to } => {
                if let Some(moved) = take(value, to) {
                    put(value, from, moved, true);
                }
            }
            Compiled::Add { path, .. } => {
                take(value, path);
            }
            Compiled::Remove { path, read_default } => {
                if let Some(default) = read_default
                    && get(value, path).is_none()
                {
                    put(value, path, default.clone(), false);
                }
            }
            Compiled::RenameValue { path, from, to } => rename_value(value, path, to, from),
        }
    }
}

fn show(pointer: &Pointer) -> String {
    pointer
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn get<'v>(value: &'v Value, pointer: &Pointer) -> Option<&'v Value> {
    pointer
        .iter()
        .try_fold(value, |at, name| at.as_object()?.get(name))
}

fn parent_mut<'v>(
    value: &'v mut Value,
    pointer: &Pointer,
    make: bool,
) -> Option<&'v mut Map<String, Value>> {
    let (_, parents) = pointer.split_last()?;
    let mut at = value;
    for name in parents {
        let object = at.as_object_mut()?;
        if make && !object.contains_key(name) {
            object.insert(name.clone(), Value::Object(Map::new()));
        }
        at = object.get_mut(name)?;
    }
    at.as_object_mut()
}

fn take(value: &mut Value, pointer: &Pointer) -> Option<Value> {
    let last = pointer.last()?;
    // `shift_remove` keeps the order of the other members (the store builds serde_json with
    // `preserve_order`, so that a value's members keep their order through a migration).
    parent_mut(value, pointer, false)?.shift_remove(last)
}

/// Sets the member at `pointer`; `make`: make missing parent objects. Returns whether it was
/// set (its parent is an object).
fn put(value: &mut Value, pointer: &Pointer, member: Value, make: bool) -> bool {
    let Some(last) = pointer.last() else {
        return false;
    };
    match parent_mut(value, pointer, make) {
        Some(object) => {
            object.insert(last.clone(), member);
            true
        }
        None => false,
    }
}

fn rename_value(value: &mut Value, pointer: &Pointer, from: &str, to: &str) {
    let Some(last) = pointer.last() else {
        return;
    };
    if let Some(object) = parent_mut(value, pointer, false)
        && let Some(member) = object.get_mut(last)
        && member.as_str() == Some(from)
    {
        *member = Value::String(to.to_owned());
    }
}

/// The migration steps of every version of one namespace that has any: version `v`'s steps
/// turn values of the version before it into values of `v`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Chain {
    steps: BTreeMap<u64, Vec<Prepared>>,
}

/// A step with the JSON text of the values it writes made once (a translation copies them in
/// as text): an add's default, a remove's read default, a value rename's new string then its
/// old one.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    step: Compiled,
    texts: [Option<Box<RawValue>>; 2],
}

impl PartialEq for Prepared {
    fn eq(&self, other: &Prepared) -> bool {
        // The texts are made from the step.
        self.step == other.step
    }
}

impl Prepared {
    fn new(step: Compiled) -> Prepared {
        let text = |value: &Value| serde_json::value::to_raw_value(value).ok();
        let texts = match &step {
            Compiled::Rename { .. } => [None, None],
            Compiled::Add { default, .. } => [text(default), None],
            Compiled::Remove { read_default, .. } => [read_default.as_ref().and_then(text), None],
            Compiled::RenameValue { from, to, .. } => [
                text(&Value::String(to.clone())),
                text(&Value::String(from.clone())),
            ],
        };
        Prepared { step, texts }
    }
}

impl Chain {
    /// Adds version `version`'s steps.
    pub(crate) fn insert(&mut self, version: u64, steps: Vec<Compiled>) {
        if !steps.is_empty() {
            self.steps
                .insert(version, steps.into_iter().map(Prepared::new).collect());
        }
    }

    /// Whether any version has steps.
    pub(crate) fn has_steps(&self) -> bool {
        !self.steps.is_empty()
    }

    /// Whether a value at version `from` reads the same at `to` (`from <= to`): no version in
    /// between has steps.
    pub(crate) fn same_shape(&self, from: u64, to: u64) -> bool {
        from >= to || self.steps.range(from + 1..=to).next().is_none()
    }

    /// Whether a value at `stored` needs work to be read at `asked`, newest `newest`.
    pub(crate) fn is_identity(&self, stored: u64, asked: u64, newest: u64) -> bool {
        self.same_shape(stored, newest) && self.same_shape(asked, newest)
    }

    /// `value`, stored at version `stored`, brought forward to `newest` then back to `asked`:
    /// the whole value at once, the reference [`Chain::translate_text`] is checked against.
    ///
    /// # Errors
    /// A [`Conflict`] under [`OnConflict::Refuse`].
    #[cfg(test)]
    pub(crate) fn translate(
        &self,
        value: &mut Value,
        stored: u64,
        asked: u64,
        newest: u64,
        on_conflict: OnConflict,
    ) -> Result<(), Conflict> {
        // (A range whose start passes its end would panic.)
        if stored < newest {
            for (_, steps) in self.steps.range(stored + 1..=newest) {
                for prepared in steps {
                    prepared.step.forward(value, on_conflict)?;
                }
            }
        }
        if asked < newest {
            for (_, steps) in self.steps.range(asked + 1..=newest).rev() {
                for prepared in steps.iter().rev() {
                    prepared.step.backward(value);
                }
            }
        }
        Ok(())
    }

    /// Applies `steps` (a new version's, not yet in the chain) forward.
    pub(crate) fn forward_by(steps: &[Compiled], value: &mut Value) {
        for step in steps {
            // Stored values: the renamed member wins, as on a read.
            let _ = step.forward(value, OnConflict::Replace);
        }
    }
}

/// An object's members as a translation holds them (`Chain::translate_text`): each kept as its
/// stored text until a step needs its value, so that a step on one member costs that member,
/// not a parse and a rewrite of the whole value (docs/benchmarks.md, "Schema migrations").
struct Members<'a>(Vec<(std::borrow::Cow<'a, str>, Member<'a>)>);

/// A string deserialized from text, borrowed from it where it has no escapes (serde's own
/// `Cow<str>` always copies).
struct Borrowed<'a>(std::borrow::Cow<'a, str>);

impl<'de> Deserialize<'de> for Borrowed<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Borrowed<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Borrowed(std::borrow::Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Borrowed(std::borrow::Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(Borrowed(std::borrow::Cow::Owned(text)))
            }
        }
        d.deserialize_str(Visit)
    }
}

enum Member<'a> {
    /// As stored.
    Raw(&'a RawValue),
    /// Made or changed by a step.
    Value(Value),
}

impl Member<'_> {
    fn into_value(self) -> Value {
        match self {
            // Stored text is valid JSON (checked when written).
            Member::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            Member::Value(value) => value,
        }
    }

    /// Whether it is the string `text` (`json`: its JSON text, compared first).
    fn is_str(&self, text: &str, json: Option<&RawValue>) -> bool {
        match self {
            Member::Raw(raw) => {
                let raw = raw.get();
                if json.is_some_and(|j| j.get() == raw) {
                    return true;
                }
                // The same string may be written with other escapes.
                raw.starts_with('"')
                    && raw.contains('\\')
                    && serde_json::from_str::<Borrowed<'_>>(raw).is_ok_and(|s| s.0 == text)
            }
            Member::Value(value) => value.as_str() == Some(text),
        }
    }
}

impl<'a> Members<'a> {
    /// The members of `text`, if it is an object.
    fn parse(text: &'a str) -> Option<Members<'a>> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Vec<(std::borrow::Cow<'de, str>, Member<'de>)>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(8));
                // Names borrowed from the text where they have no escapes.
                while let Some(name) = map.next_key::<Borrowed<'de>>()? {
                    let raw: &'de RawValue = map.next_value()?;
                    out.push((name.0, Member::Raw(raw)));
                }
                Ok(out)
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        serde::Deserializer::deserialize_map(&mut de, Visit)
            .ok()
            .map(Members)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(n, _)| n == name)
    }

    /// Removes a member, keeping the others' order.
    fn take(&mut self, name: &str) -> Option<Member<'a>> {
        self.position(name).map(|at| self.0.remove(at).1)
    }

    /// Sets a member: in its place if it is there, else last (as `serde_json::Map::insert`).
    fn put(&mut self, name: Cow<'a, str>, member: Member<'a>) {
        match self.position(&name) {
            Some(at) => self.0[at].1 = member,
            None => self.0.push((name, member)),
        }
    }

    /// Runs `step` on the members it names, as values (a step into nested members).
    fn through_values(
        &mut self,
        step: &Compiled,
        apply: impl FnOnce(&Compiled, &mut Value) -> Result<(), Conflict>,
    ) -> Result<(), Conflict> {
        let mut names: Vec<&str> = step
            .pointers()
            .filter_map(|p| p.first())
            .map(String::as_str)
            .collect();
        names.dedup();
        let mut object = Map::new();
        let mut held = Vec::new();
        for name in names {
            if let Some(member) = self.take_keeping_place(name) {
                object.insert(name.to_owned(), member.into_value());
                held.push(name.to_owned());
            }
        }
        let mut value = Value::Object(object);
        apply(step, &mut value)?;
        let Value::Object(mut object) = value else {
            return Ok(());
        };
        // Back in place; a member the step removed leaves its place; a new one goes last.
        for name in held {
            match object.shift_remove(&name) {
                Some(value) => self.put(Cow::Owned(name), Member::Value(value)),
                None => {
                    self.take(&name);
                }
            }
        }
        for (name, value) in object {
            self.put(Cow::Owned(name), Member::Value(value));
        }
        Ok(())
    }

    /// The member's value, leaving a placeholder in its place (put back by `put`).
    fn take_keeping_place(&mut self, name: &str) -> Option<Member<'a>> {
        let at = self.position(name)?;
        Some(std::mem::replace(
            &mut self.0[at].1,
            Member::Value(Value::Null),
        ))
    }

    /// The object's text, allocated once at its exact length (so that the `Box<str>` a
    /// [`Json`](crate::model::item::Json) keeps takes it without a copy).
    fn write(&self) -> String {
        // Members a step made: their text first, to know the length.
        let made: Vec<Option<String>> = self
            .0
            .iter()
            .map(|(_, member)| match member {
                Member::Raw(_) => None,
                Member::Value(value) => Some(value.to_string()),
            })
            .collect();
        // Names JSON escapes (rare): their text; the others are written as they are.
        let names: Vec<Option<String>> = self.0.iter().map(|(name, _)| escaped(name)).collect();
        let length = 2
            + self.0.len().saturating_sub(1)
            + self
                .0
                .iter()
                .zip(&made)
                .zip(&names)
                .map(|(((plain, member), made), name)| {
                    name.as_ref().map_or(plain.len() + 2, String::len)
                        + 1
                        + match (member, made) {
                            (_, Some(text)) => text.len(),
                            (Member::Raw(raw), None) => raw.get().len(),
                            (Member::Value(_), None) => 0,
                        }
                })
                .sum::<usize>();
        let mut out = String::with_capacity(length);
        out.push('{');
        for (i, (((plain, member), made), name)) in self.0.iter().zip(&made).zip(&names).enumerate()
        {
            if i > 0 {
                out.push(',');
            }
            match name {
                Some(text) => out.push_str(text),
                None => {
                    out.push('"');
                    out.push_str(plain);
                    out.push('"');
                }
            }
            out.push(':');
            match (member, made) {
                (_, Some(text)) => out.push_str(text),
                (Member::Raw(raw), None) => out.push_str(raw.get()),
                (Member::Value(_), None) => {}
            }
        }
        out.push('}');
        out
    }
}

/// A member name's JSON text when it has a character JSON escapes (`None`: it is written
/// between quotes as it is).
fn escaped(name: &str) -> Option<String> {
    name.bytes()
        .any(|b| b < 0x20 || b == b'"' || b == b'\\')
        // A string always serializes.
        .then(|| serde_json::to_string(name).unwrap_or_default())
}

impl Compiled {
    /// Its pointers.
    fn pointers(&self) -> impl Iterator<Item = &Pointer> {
        let (a, b) = match self {
            Compiled::Rename { from, to } => (from, Some(to)),
            Compiled::Add { path, .. }
            | Compiled::Remove { path, .. }
            | Compiled::RenameValue { path, .. } => (path, None),
        };
        std::iter::once(a).chain(b)
    }
}

impl Prepared {
    /// [`Compiled::forward`] on an object's members.
    fn forward_members<'a>(
        &'a self,
        m: &mut Members<'a>,
        on_conflict: OnConflict,
    ) -> Result<(), Conflict> {
        let written = |at: usize| self.texts[at].as_deref().map(Member::Raw);
        match &self.step {
            Compiled::Rename { from, to } if from.len() == 1 && to.len() == 1 => {
                let Some(moved) = m.take(&from[0]) else {
                    return Ok(());
                };
                if on_conflict == OnConflict::Refuse && m.position(&to[0]).is_some() {
                    return Err(Conflict(format!(
                        "the value has both {} and {}, which a rename makes one",
                        show(from),
                        show(to)
                    )));
                }
                m.put(Cow::Borrowed(&to[0]), moved);
            }
            Compiled::Add { path, .. } if path.len() == 1 => {
                if m.position(&path[0]).is_none()
                    && let Some(default) = written(0)
                {
                    m.put(Cow::Borrowed(&path[0]), default);
                }
            }
            Compiled::Remove { path, .. } if path.len() == 1 => {
                m.take(&path[0]);
            }
            Compiled::RenameValue { path, from, .. } if path.len() == 1 => {
                if m.position(&path[0])
                    .is_some_and(|at| m.0[at].1.is_str(from, self.texts[1].as_deref()))
                    && let Some(to) = written(0)
                {
                    m.put(Cow::Borrowed(&path[0]), to);
                }
            }
            deeper => {
                m.through_values(deeper, |step, value| step.forward(value, on_conflict))?;
            }
        }
        Ok(())
    }

    /// [`Compiled::backward`] on an object's members.
    fn backward_members<'a>(&'a self, m: &mut Members<'a>) {
        let written = |at: usize| self.texts[at].as_deref().map(Member::Raw);
        match &self.step {
            Compiled::Rename { from, to } if from.len() == 1 && to.len() == 1 => {
                if let Some(moved) = m.take(&to[0]) {
                    m.put(Cow::Borrowed(&from[0]), moved);
                }
            }
            Compiled::Add { path, .. } if path.len() == 1 => {
                m.take(&path[0]);
            }
            Compiled::Remove { path, .. } if path.len() == 1 => {
                if m.position(&path[0]).is_none()
                    && let Some(default) = written(0)
                {
                    m.put(Cow::Borrowed(&path[0]), default);
                }
            }
            Compiled::RenameValue { path, to, .. } if path.len() == 1 => {
                if m.position(&path[0])
                    .is_some_and(|at| m.0[at].1.is_str(to, self.texts[0].as_deref()))
                    && let Some(from) = written(1)
                {
                    m.put(Cow::Borrowed(&path[0]), from);
                }
            }
            deeper => {
                // Backward steps never conflict.
                let _ = m.through_values(deeper, |step, value| {
                    step.backward(value);
                    Ok(())
                });
            }
        }
    }
}

impl Chain {
    /// The translation on JSON text: the text of `json` (stored at `stored`) in version
    /// `asked`, members no step touches copied as they are; `None` when it reads the same (not
    /// an object: every step names a member).
    ///
    /// # Errors
    /// A [`Conflict`] under [`OnConflict::Refuse`].
    pub(crate) fn translate_text<'a>(
        &'a self,
        json: &'a str,
        stored: u64,
        asked: u64,
        newest: u64,
        on_conflict: OnConflict,
    ) -> Result<Option<String>, Conflict> {
        let Some(mut members) = Members::parse(json) else {
            return Ok(None);
        };
        if stored < newest {
            for (_, steps) in self.steps.range(stored + 1..=newest) {
                for prepared in steps {
                    prepared.forward_members(&mut members, on_conflict)?;
                }
            }
        }
        if asked < newest {
            for (_, steps) in self.steps.range(asked + 1..=newest).rev() {
                for prepared in steps.iter().rev() {
                    prepared.backward_members(&mut members);
                }
            }
        }
        Ok(Some(members.write()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(versions: &[(u64, Value)]) -> Chain {
        let mut chain = Chain::default();
        for (v, steps) in versions {
            let steps: Vec<Step> = serde_json::from_value(steps.clone()).expect("steps");
            chain.insert(
                *v,
                steps.iter().map(|s| s.compile().expect("step")).collect(),
            );
        }
        chain
    }

    fn three() -> Chain {
        chain(&[
            (
                2,
                json!([{"op": "rename", "from": "/name", "to": "/full_name"},
                       {"op": "add", "path": "/tier", "default": "free"}]),
            ),
            (
                3,
                json!([{"op": "remove", "path": "/legacy", "read_default": 0},
                       {"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"}]),
            ),
        ])
    }

    fn read(chain: &Chain, value: Value, stored: u64, asked: u64) -> Value {
        let mut value = value;
        chain
            .translate(&mut value, stored, asked, 3, OnConflict::Replace)
            .expect("no conflict on a read");
        value
    }

    #[test]
    fn a_version_one_value_reads_in_every_version() {
        let chain = three();
        let v1 = json!({"name": "Ada", "legacy": 5, "status": "shipped"});
        assert_eq!(
            read(&chain, v1.clone(), 1, 3),
            json!({"full_name": "Ada", "tier": "free", "status": "sent"})
        );
        assert_eq!(
            read(&chain, v1.clone(), 1, 2),
            json!({"full_name": "Ada", "tier": "free", "legacy": 0, "status": "shipped"})
        );
        // Forward then back: the removed member reads as its read default.
        assert_eq!(
            read(&chain, v1, 1, 1),
            json!({"name": "Ada", "legacy": 0, "status": "shipped"})
        );
    }

    #[test]
    fn a_newest_value_reads_in_older_versions() {
        let chain = three();
        let v3 = json!({"full_name": "Ada", "tier": "pro", "status": "sent"});
        assert_eq!(read(&chain, v3.clone(), 3, 3), v3);
        assert_eq!(
            read(&chain, v3, 3, 1),
            json!({"name": "Ada", "legacy": 0, "status": "shipped"})
        );
    }

    #[test]
    fn renames_conflict_only_on_writes() {
        let chain = three();
        let both = json!({"name": "Ada", "full_name": "Ada L"});
        let mut write = both.clone();
        let err = chain
            .translate(&mut write, 1, 3, 3, OnConflict::Refuse)
            .expect_err("both names");
        assert!(
            err.0.contains("/name") && err.0.contains("/full_name"),
            "{}",
            err.0
        );
        assert_eq!(read(&chain, both, 1, 3)["full_name"], json!("Ada"));
    }

    #[test]
    fn steps_on_missing_or_non_object_parents_do_nothing() {
        let chain = chain(&[(
            2,
            json!([
                {"op": "rename", "from": "/a/b", "to": "/c/d"},
                {"op": "add", "path": "/x/y", "default": 1},
                {"op": "rename_value", "path": "/s", "from": "a", "to": "b"}
            ]),
        )]);
        let mut value = json!([1, 2]);
        chain
            .translate(&mut value, 0, 2, 2, OnConflict::Refuse)
            .expect("ok");
        assert_eq!(value, json!([1, 2]));
        let mut value = json!({"a": {"b": 7}, "s": 5});
        chain
            .translate(&mut value, 0, 2, 2, OnConflict::Refuse)
            .expect("ok");
        // The rename makes the objects its target needs; `/x` is missing, so no add.
        assert_eq!(value, json!({"a": {}, "s": 5, "c": {"d": 7}}));
    }

    /// The text translation (members kept as text) answers what the value translation does,
    /// and refuses what it refuses, on random values and random chains.
    #[test]
    fn text_and_value_translations_agree() {
        use proptest::prelude::*;
        let member = || prop_oneof![Just("a"), Just("b"), Just("c"), Just("d")];
        let pointer =
            || prop::collection::vec(member(), 1..3).prop_map(|p| format!("/{}", p.join("/")));
        let leaf = prop_oneof![
            Just(json!("x")),
            Just(json!("y")),
            Just(json!(1)),
            Just(json!(2.5e3)),
            Just(json!(null)),
            Just(json!([1, "x"]))
        ];
        let value = leaf.prop_recursive(3, 16, 4, move |inner| {
            prop::collection::btree_map(member().prop_map(str::to_owned), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        });
        let step = prop_oneof![
            (pointer(), pointer()).prop_map(|(from, to)| json!({"op": "rename", "from": from, "to": to})),
            (pointer(), value.clone()).prop_map(|(path, d)| json!({"op": "add", "path": path, "default": d})),
            (pointer(), prop::option::of(value.clone())).prop_map(|(path, d)| match d {
                Some(d) => json!({"op": "remove", "path": path, "read_default": d}),
                None => json!({"op": "remove", "path": path}),
            }),
            (pointer(), prop_oneof![Just("x"), Just("y")], prop_oneof![Just("x"), Just("y"), Just("z")])
                .prop_map(|(path, from, to)| json!({"op": "rename_value", "path": path, "from": from, "to": to})),
        ];
        let steps = prop::collection::vec(prop::collection::vec(step, 0..4), 1..4);
        let root = prop::collection::btree_map(member().prop_map(str::to_owned), value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()));
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(
                &(steps, root, 0u64..4, 1u64..4, any::<bool>()),
                |(versions, root, stored, asked, refuse)| {
                    let mut chain = Chain::default();
                    for (i, steps) in versions.iter().enumerate() {
                        let compiled: Vec<Compiled> = steps
                            .iter()
                            .filter_map(|s| {
                                serde_json::from_value::<Step>(s.clone())
                                    .ok()?
                                    .compile()
                                    .ok()
                            })
                            .collect();
                        chain.insert(i as u64 + 1, compiled);
                    }
                    let newest = versions.len() as u64;
                    let (stored, asked) = (stored.min(newest), asked.min(newest));
                    let on_conflict = if refuse {
                        OnConflict::Refuse
                    } else {
                        OnConflict::Replace
                    };
                    let mut by_value = root.clone();
                    let value = chain.translate(&mut by_value, stored, asked, newest, on_conflict);
                    let text =
                        chain.translate_text(&root.to_string(), stored, asked, newest, on_conflict);
                    match (value, text) {
                        (Ok(()), Ok(Some(text))) => {
                            let by_text: Value = serde_json::from_str(&text).expect("JSON");
                            prop_assert_eq!(&by_text, &by_value);
                            // Member order too.
                            prop_assert_eq!(text, by_value.to_string());
                        }
                        (Err(a), Err(b)) => prop_assert_eq!(a, b),
                        (a, b) => prop_assert!(false, "value {:?}, text {:?}", a, b),
                    }
                    Ok(())
                },
            )
            .expect("agree");
    }

    #[test]
    fn pointers_follow_rfc_6901() {
        assert_eq!(parse_pointer("/a~1b/c~0d").expect("ok"), vec!["a/b", "c~d"]);
        assert_eq!(parse_pointer("/").expect("ok"), vec![""]);
        for bad in ["", "a", "/a~2", "/a~"] {
            assert!(parse_pointer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn steps_are_checked() {
        let step = |v: Value| serde_json::from_value::<Step>(v);
        assert!(
            step(json!({"op": "add", "path": "/a"})).is_err(),
            "a default is required"
        );
        assert!(step(json!({"op": "rename", "from": "/a", "to": "/b", "x": 1})).is_err());
        assert!(step(json!({"op": "drop", "path": "/a"})).is_err());
        let nested = step(json!({"op": "rename", "from": "/a", "to": "/a/b"})).expect("parses");
        assert!(nested.compile().is_err());
        let null = step(json!({"op": "remove", "path": "/a", "read_default": null})).expect("ok");
        assert_eq!(
            null,
            Step::Remove {
                path: "/a".into(),
                read_default: Some(Value::Null)
            }
        );
    }
}
