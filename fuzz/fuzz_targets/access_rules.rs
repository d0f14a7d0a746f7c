//! Access rules and the tokens presented to a server: the input is a rule template, a key path
//! and a variable's value, on three lines. Compiling a template never panics (a bad one is
//! `InvalidRequest`); a compiled rule with the variable bound answers the same for a path as a
//! plain reading of its elements would on the cases that reading covers: a subtree covered is
//! matched at its root, and what matches is reached from its group. A presented token of any
//! shape never panics the id parse, and an id it yields is the 20 characters after `pdb_`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_keys::KeyPath;
use pathdb_store::{CompiledRule, Grant, Op, Rule};

const MAX_LEN: usize = 2048;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(id) = pathdb_store::token_id_of(text) {
        assert_eq!(id.len(), 20);
        assert!(text.starts_with("pdb_") && text[4..].starts_with(id));
    }
    let mut lines = text.splitn(3, '\n');
    let (Some(template), Some(path), value) = (lines.next(), lines.next(), lines.next()) else {
        return;
    };
    let rule = Rule {
        path: template.to_owned(),
        allow: vec![Op::Read],
    };
    let compiled = match CompiledRule::compile(&rule) {
        Ok(compiled) => compiled,
        Err(pathdb_store::Error::InvalidRequest(_)) => return,
        Err(other) => panic!("a bad template is InvalidRequest, not {other:?}"),
    };
    let Ok(path) = path.parse::<KeyPath>() else {
        return;
    };
    let value = value.map(|v| serde_json::Value::String(v.to_owned()));
    let grant = Grant::new(&[compiled], &|_| value.clone());
    let allowed = grant.allows(Op::Read, &path);
    assert!(!grant.allows(Op::Write, &path), "only read was allowed");
    if grant.covers_subtree(Op::Read, &path) {
        assert!(allowed, "a covered subtree's root matches");
    }
    if allowed {
        let group = KeyPath::from_elements(vec![path.group().clone()]).expect("a group");
        assert!(grant.reaches(Op::Read, &group), "what matches is reached from its group");
        assert!(grant.reaches(Op::Read, &path));
    }
});
