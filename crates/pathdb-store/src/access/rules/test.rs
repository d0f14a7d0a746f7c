//! The matcher against a reference written from the module's table, on random rules and paths.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn path(text: &str) -> KeyPath {
    text.parse().unwrap()
}

fn grant(rules: &[(&str, &[Op])], vars: Value) -> Grant {
    let compiled: Vec<CompiledRule> = rules
        .iter()
        .map(|(p, ops)| {
            CompiledRule::compile(&Rule {
                path: (*p).to_owned(),
                allow: ops.to_vec(),
            })
            .unwrap()
        })
        .collect();
    Grant::new(&compiled, &|name| vars.get(name).cloned())
}

#[test]
fn templates_match_as_the_table_says() {
    let g = grant(
        &[
            ("/team-{team}/**", &[Op::Read, Op::Write]),
            ("/public-1/doc-*", &[Op::Read]),
            ("/user-{sub}/settings", &[Op::Read]),
            ("/*/note-1", &[Op::Read]),
        ],
        json!({"team": 7, "sub": "alice"}),
    );
    assert!(g.allows(Op::Read, &path("/team-7")));
    assert!(g.allows(Op::Write, &path("/team-7/doc-1/rev-2")));
    assert!(!g.allows(Op::Read, &path("/team-8/doc-1")));
    assert!(!g.allows(Op::Read, &path("/team-70")));
    assert!(g.allows(Op::Read, &path("/public-1/doc-9")));
    assert!(g.allows(Op::Read, &path("/public-1/doc-abc")));
    assert!(!g.allows(Op::Write, &path("/public-1/doc-9")));
    assert!(!g.allows(Op::Read, &path("/public-1")));
    assert!(!g.allows(Op::Read, &path("/public-1/doc-9/x-1")));
    assert!(g.allows(Op::Read, &path("/user-alice/settings")));
    assert!(!g.allows(Op::Read, &path("/user-alice/settings-1")));
    assert!(g.allows(Op::Read, &path("/anything-3/note-1")));
    assert!(!g.allows(Op::Admin, &path("/team-7")));
    assert!(g.covers_subtree(Op::Read, &path("/team-7/doc-1")));
    assert!(!g.covers_subtree(Op::Read, &path("/public-1")));
    assert!(g.covers_children(Op::Read, &path("/team-7")));
    assert!(!g.covers_children(Op::Read, &path("/public-1")));
    assert!(g.reaches(Op::Read, &path("/public-1")));
    assert!(g.reaches(Op::Read, &path("/user-alice")));
    // `/*/note-1` may match below any group.
    assert!(g.reaches(Op::Read, &path("/user-bob")));
    assert!(!g.reaches(Op::Write, &path("/user-bob")));
    assert!(!g.everywhere(Op::Read));
    // A prefix whose last element has no id lists every id of that namespace: a pattern ending
    // in the id-less element does not cover it, one above it does.
    let g = grant(&[("/team-7/doc/**", &[Op::Read])], json!({}));
    assert!(g.allows(Op::Read, &path("/team-7/doc")));
    assert!(!g.covers_subtree(Op::Read, &path("/team-7/doc")));
    assert!(!g.covers_children(Op::Read, &path("/team-7/doc")));
    let g = grant(&[("/team-7/**", &[Op::Read])], json!({}));
    assert!(g.covers_subtree(Op::Read, &path("/team-7/doc")));
}

#[test]
fn a_missing_variable_matches_nothing() {
    let g = grant(&[("/team-{team}/**", &[Op::Read])], json!({}));
    assert!(!g.allows(Op::Read, &path("/team-7")));
    let g = grant(&[("/team-{team}/**", &[Op::Read])], json!({"team": [1]}));
    assert!(!g.allows(Op::Read, &path("/team-1")));
}

#[test]
fn string_variables_are_read_as_ids() {
    let g = grant(&[("/team-{team}/**", &[Op::Read])], json!({"team": "7"}));
    assert!(g.allows(Op::Read, &path("/team-7")));
    let id = "4c9d36e5-6b19-4e6a-828c-226ed667458a";
    let g = grant(&[("/user-{sub}/**", &[Op::Read])], json!({ "sub": id }));
    assert!(g.allows(Op::Read, &path(&format!("/user-{id}/post-1"))));
    let g = grant(&[("/user-{sub}/**", &[Op::Read])], json!({"sub": "a/b"}));
    assert!(!g.allows(Op::Read, &path("/user-a")));
    // Two claims never name one path: only an id's canonical text is that id.
    for other in ["al%69ce", "007", "4C9D36E5-6B19-4E6A-828C-226ED667458A"] {
        let g = grant(&[("/user-{sub}/**", &[Op::Read])], json!({ "sub": other }));
        for target in ["/user-alice", "/user-7", &format!("/user-{id}")] {
            assert!(
                !g.allows(Op::Read, &path(target)),
                "{other} reached {target}"
            );
        }
    }
}

#[test]
fn bad_rules_are_refused_with_reasons() {
    for (text, ops, why) in [
        ("team-1/**", vec![Op::Read], "starts with `/`"),
        ("/**/team-1", vec![Op::Read], "last element"),
        ("/team-1//doc", vec![Op::Read], "empty element"),
        ("/team-{}", vec![Op::Read], "variable"),
        ("/team-1/**", vec![Op::Admin], "only on `/**`"),
        ("/team-1/**", vec![], "allows nothing"),
        ("/", vec![Op::Read], "empty element"),
        ("/Bad Ns-1", vec![Op::Read], "namespace"),
    ] {
        let err = CompiledRule::compile(&Rule {
            path: text.into(),
            allow: ops,
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains(why), "{text}: {err}");
    }
    assert!(
        CompiledRule::compile(&Rule {
            path: "/**".into(),
            allow: vec![Op::Admin]
        })
        .is_ok()
    );
}

/// A rule element for the property test.
#[derive(Clone, Debug)]
enum El {
    Any,
    NsAny(&'static str),
    NsNone(&'static str),
    Fixed(&'static str, i64),
    Var(&'static str),
}

const NAMESPACES: [&str; 3] = ["a", "b", "c"];

fn el() -> impl Strategy<Value = El> {
    prop_oneof![
        Just(El::Any),
        prop::sample::select(&NAMESPACES[..]).prop_map(El::NsAny),
        prop::sample::select(&NAMESPACES[..]).prop_map(El::NsNone),
        (prop::sample::select(&NAMESPACES[..]), 1i64..4).prop_map(|(n, i)| El::Fixed(n, i)),
        prop::sample::select(&NAMESPACES[..]).prop_map(El::Var),
    ]
}

fn text_of(elements: &[El], subtree: bool) -> String {
    let mut out = String::new();
    for e in elements {
        out.push('/');
        match e {
            El::Any => out.push('*'),
            El::NsAny(n) => out.push_str(&format!("{n}-*")),
            El::NsNone(n) => out.push_str(n),
            El::Fixed(n, i) => out.push_str(&format!("{n}-{i}")),
            El::Var(n) => out.push_str(&format!("{n}-{{v}}")),
        }
    }
    if subtree {
        out.push_str("/**");
    }
    out
}

/// A path element: a namespace and an id (0: none).
type P = (&'static str, i64);

fn path_el() -> impl Strategy<Value = P> {
    (prop::sample::select(&NAMESPACES[..]), 0i64..4)
}

fn path_text(elements: &[P]) -> String {
    elements
        .iter()
        .map(|(n, i)| {
            if *i == 0 {
                format!("/{n}")
            } else {
                format!("/{n}-{i}")
            }
        })
        .collect()
}

/// The reference: the module's table, element by element, written as plainly as possible.
fn reference_matches(rule: &[El], subtree: bool, v: Option<i64>, path: &[P]) -> bool {
    if subtree {
        if path.len() < rule.len() {
            return false;
        }
    } else if path.len() != rule.len() {
        return false;
    }
    for (r, (ns, id)) in rule.iter().zip(path) {
        let ok = match r {
            El::Any => true,
            El::NsAny(n) => n == ns && *id != 0,
            El::NsNone(n) => n == ns && *id == 0,
            El::Fixed(n, i) => n == ns && i == id,
            El::Var(n) => n == ns && v.is_some_and(|v| v == *id),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Only the last element of a path may omit its id, and not the first.
fn valid_path(elements: &[P]) -> bool {
    elements
        .iter()
        .enumerate()
        .all(|(i, (_, id))| *id != 0 || (i + 1 == elements.len() && i > 0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_matcher_agrees_with_the_reference(
        rule in prop::collection::vec(el(), 0..4),
        subtree in any::<bool>(),
        v in prop::option::of(1i64..4),
        paths in prop::collection::vec(prop::collection::vec(path_el(), 1..6), 1..8),
    ) {
        prop_assume!(subtree || !rule.is_empty());
        let text = text_of(&rule, subtree);
        let compiled = CompiledRule::compile(&Rule { path: text.clone(), allow: vec![Op::Read] }).unwrap();
        let vars = match v { Some(v) => json!({"v": v}), None => json!({}) };
        let g = Grant::new(&[compiled], &|name| vars.get(name).cloned());
        for p in paths.iter().filter(|p| valid_path(p)) {
            let kp = path(&path_text(p));
            let expected = reference_matches(&rule, subtree, v, p);
            prop_assert_eq!(g.allows(Op::Read, &kp), expected, "rule {} path {}", text, kp);
            prop_assert!(!g.allows(Op::Write, &kp));
            // A covered subtree: its root and a longer path under it match.
            if g.covers_subtree(Op::Read, &kp) {
                prop_assert!(expected);
                // (A path whose last element has no id has nothing below it.)
                if p.last().is_some_and(|(_, id)| *id != 0) {
                    let mut deeper = p.clone();
                    deeper.push(("c", 1));
                    prop_assert!(reference_matches(&rule, subtree, v, &deeper), "{} covers {}", text, kp);
                }
            }
            // A covered set of children: a child matches.
            if g.covers_children(Op::Read, &kp) && p.last().is_some_and(|(_, id)| *id != 0) {
                let mut child = p.clone();
                child.push(("b", 2));
                prop_assert!(reference_matches(&rule, subtree, v, &child), "{} covers children of {}", text, kp);
            }
            // What matches is reached from every ancestor, and itself.
            if expected {
                for n in 1..=p.len() {
                    let ancestor = &p[..n];
                    if valid_path(ancestor) {
                        prop_assert!(g.reaches(Op::Read, &path(&path_text(ancestor))));
                    }
                }
            }
        }
    }
}
