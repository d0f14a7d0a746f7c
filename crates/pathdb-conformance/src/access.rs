//! Roles and issued tokens (docs/access.md): stored, versioned and revoked the same on every
//! backend; a token's secret never stored.

use crate::{Harness, manual_options};
use pathdb_store::backend::{Backend, Direction, Reader, SortRange};
use pathdb_store::{Condition, Error, NewToken, Op, Role, Rule, Timestamp};
use serde_json::json;
use std::ops::Bound;
use std::time::Duration;

fn member_role() -> Role {
    Role {
        rules: vec![Rule {
            path: "/team-{team}/**".into(),
            allow: vec![Op::Read, Op::Write],
        }],
        description: Some("one team's items".into()),
    }
}

/// Roles: made, changed under a version, refused when stale or invalid, deleted and made again
/// without reusing a version; the built-in ones listed and never changed.
pub fn roles_are_versioned_records<H: Harness>(harness: &H) {
    let (_clock, options) = manual_options();
    let store = harness.open(options);
    let names = |store: &pathdb_store::Store<H::Backend>| {
        store
            .roles()
            .unwrap()
            .into_iter()
            .map(|r| (r.name, r.builtin))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&store),
        [
            ("admin".to_owned(), true),
            ("read".to_owned(), true),
            ("read-write".to_owned(), true)
        ]
    );
    assert_eq!(store.role("member").unwrap(), None);
    let (first, created) = store
        .put_role("member", &member_role(), Some(Condition::MustNotExist))
        .unwrap();
    assert!(created);
    assert_eq!((first.version, first.builtin), (1, false));
    assert_eq!(store.role("member").unwrap().as_ref(), Some(&first));
    let mut wider = member_role();
    wider.rules.push(Rule {
        path: "/public-1/**".into(),
        allow: vec![Op::Read],
    });
    let (second, created) = store
        .put_role("member", &wider, Some(Condition::IfVersion(1)))
        .unwrap();
    assert!(!created);
    assert_eq!(second.version, 2);
    assert_eq!(second.role, wider);
    match store.put_role("member", &member_role(), Some(Condition::IfVersion(1))) {
        Err(Error::RoleConditionFailed { current, .. }) => assert_eq!(current, Some(2)),
        other => panic!("a stale version must fail, got {other:?}"),
    }
    // Invalid rules and built-in roles are refused, and nothing changes.
    let bad = Role {
        rules: vec![Rule {
            path: "/team-1/**".into(),
            allow: vec![Op::Admin],
        }],
        description: None,
    };
    assert!(matches!(
        store.put_role("member", &bad, None),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        store.put_role("bad name", &member_role(), None),
        Err(Error::InvalidRequest(_))
    ));
    for builtin in ["read", "read-write", "admin"] {
        assert!(matches!(
            store.put_role(builtin, &member_role(), None),
            Err(Error::BuiltinRole(_))
        ));
        assert!(matches!(
            store.delete_role(builtin, None),
            Err(Error::BuiltinRole(_))
        ));
        assert!(store.role(builtin).unwrap().unwrap().builtin);
    }
    assert_eq!(store.role("member").unwrap().unwrap().version, 2);
    // A delete leaves a tombstone: the role made again continues the versions.
    assert!(matches!(
        store.delete_role("member", Some(Condition::IfVersion(1))),
        Err(Error::RoleConditionFailed { .. })
    ));
    let removed = store
        .delete_role("member", Some(Condition::IfVersion(2)))
        .unwrap();
    assert_eq!(removed.map(|r| r.version), Some(2));
    assert_eq!(store.role("member").unwrap(), None);
    assert_eq!(store.delete_role("member", None).unwrap(), None);
    let (again, created) = store.put_role("member", &member_role(), None).unwrap();
    assert!(created);
    assert_eq!(
        again.version, 4,
        "a version is never used twice for one role"
    );
}

/// Tokens: issued for an existing role, found by their whole text only, listed without
/// secrets, expired by the clock, revoked for good; no record holds a secret.
pub fn tokens_are_issued_and_revoked<H: Harness>(harness: &H) {
    let (clock, options) = manual_options();
    let store = harness.open(options);
    store.put_role("member", &member_role(), None).unwrap();
    let new = |vars: serde_json::Value| NewToken {
        role: "member".into(),
        vars: vars.as_object().cloned().unwrap_or_default(),
        expires_at: None,
        description: Some("ci".into()),
    };
    assert!(matches!(
        store.create_token(&NewToken {
            role: "nobody".into(),
            ..new(json!({}))
        }),
        Err(Error::UnknownRole(_))
    ));
    assert!(matches!(
        store.create_token(&new(json!({"team": [7]}))),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        store.create_token(&NewToken {
            expires_at: Some(Timestamp(store.now().0 - 1)),
            ..new(json!({}))
        }),
        Err(Error::InvalidRequest(_))
    ));
    let (info, secret) = store.create_token(&new(json!({"team": 7}))).unwrap();
    assert!(secret.starts_with("pdb_") && secret.contains(&info.id));
    assert_eq!(info.vars, *json!({"team": 7}).as_object().unwrap());
    assert_eq!(store.find_token(&secret).unwrap().as_ref(), Some(&info));
    // A wrong secret with the right id, a truncated one, another shape: not found.
    for wrong in [
        format!(
            "pdb_{}_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            info.id
        ),
        secret[..secret.len() - 1].to_owned(),
        "pdb_x_y".to_owned(),
        String::new(),
    ] {
        assert_eq!(store.find_token(&wrong).unwrap(), None, "{wrong}");
    }
    let (short, short_secret) = store
        .create_token(&NewToken {
            expires_at: Some(Timestamp(store.now().0 + 60_000_000)),
            ..new(json!({"team": "8"}))
        })
        .unwrap();
    let listed: Vec<_> = store.tokens().unwrap().into_iter().map(|t| t.id).collect();
    let mut expected = vec![info.id.clone(), short.id.clone()];
    expected.sort();
    assert_eq!(listed, expected);
    // No record of the system partition holds a secret.
    let reader = store.backend().reader().unwrap();
    let all = SortRange {
        start: Bound::Unbounded,
        end: Bound::Unbounded,
    };
    for (_, record) in reader
        .scan(&[0], &all, Direction::Forward, usize::MAX)
        .unwrap()
    {
        let text = String::from_utf8_lossy(&record.value);
        for (s, id) in [(&secret, &info.id), (&short_secret, &short.id)] {
            // The secret is all after `pdb_<id>_`, not after the last `_`: base64url has `_`
            // in its alphabet, and a tail cut at one would be a character or two long.
            let tail = s.strip_prefix(&format!("pdb_{id}_")).unwrap();
            assert_eq!(tail.len(), 43, "{s}");
            assert!(!text.contains(tail), "a stored record holds a secret");
        }
    }
    drop(reader);
    // Expiry is the clock's.
    assert!(
        !store
            .find_token(&short_secret)
            .unwrap()
            .unwrap()
            .expired(store.now())
    );
    clock.advance(Duration::from_secs(61));
    assert!(
        store
            .find_token(&short_secret)
            .unwrap()
            .unwrap()
            .expired(store.now())
    );
    // Last use, to the minute; never brings a revoked token back.
    store.touch_token(&info.id).unwrap();
    let used = store
        .token(&info.id)
        .unwrap()
        .unwrap()
        .last_used_at
        .unwrap();
    assert_eq!(used.0 % 60_000_000, 0);
    assert!(used.0 <= store.now().0 && store.now().0 - used.0 < 60_000_000);
    assert!(store.revoke_token(&info.id).unwrap());
    assert!(!store.revoke_token(&info.id).unwrap());
    store.touch_token(&info.id).unwrap();
    assert_eq!(store.find_token(&secret).unwrap(), None);
    assert_eq!(store.token(&info.id).unwrap(), None);
    let listed: Vec<_> = store.tokens().unwrap().into_iter().map(|t| t.id).collect();
    assert_eq!(listed, [short.id]);
}
