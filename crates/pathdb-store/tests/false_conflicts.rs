//! The false-conflict rate of listing checks, with and without a filter (docs/transactions.md,
//! "Filtered listing checks"): a client decides on the open orders of a user (a listing), other
//! clients write orders meanwhile, mostly ones that are and stay closed, and the client commits
//! with the listing's check. A conflict is false when no write changed what the client decided
//! on: the filtered result. The rates are counted, not timed; the test prints them and checks
//! that a filtered check has no false conflict and misses no true one.

use pathdb_store::backend::InMemoryBackend;
use pathdb_store::{
    Error, Filter, Json, ListRequest, PutOptions, Store, StoreOptions, Transaction,
};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[test]
fn filtered_checks_have_no_false_conflicts() {
    let store = Store::new(InMemoryBackend::new(), StoreOptions::default()).expect("a store");
    let order = |n: u64| format!("/user-1/order-{n}").parse().expect("a path");
    let value = |status: &str, total: u64| {
        Json::parse(&format!(r#"{{"status": "{status}", "total": {total}}}"#)).expect("json")
    };
    // 200 orders, 20 of them open.
    let mut open = [false; 200];
    for n in 0..200u64 {
        let status = if n % 10 == 0 { "open" } else { "closed" };
        open[n as usize] = n % 10 == 0;
        store
            .put(&order(n), value(status, n), PutOptions::default())
            .expect("put");
    }
    let filter = Filter::compile(r#"value.status == "open""#).expect("compiles");
    let request = ListRequest::new("/user-1/order".parse().expect("a path")).filter(filter);
    let mut rng = Rng(0x5eed_c0ff);
    let rounds = 1000;
    // (false conflicts, true conflicts, missed) for the unfiltered and the filtered check.
    let mut plain = (0, 0, 0);
    let mut filtered = (0, 0, 0);
    for _ in 0..rounds {
        let token = store
            .list(&request)
            .expect("list")
            .changes_token
            .expect("a token");
        let check = request.check(token);
        let mut unfiltered = check.clone();
        unfiltered.filter = None;
        // Three writes by others: most to a closed order that stays closed (a note, a total),
        // some that open or close one, or change an open one.
        let mut changed = false;
        for _ in 0..3 {
            let n = rng.below(200);
            let now_open = match rng.below(20) {
                0 => !open[n as usize],
                _ => open[n as usize],
            };
            changed |= open[n as usize] || now_open;
            open[n as usize] = now_open;
            let status = if now_open { "open" } else { "closed" };
            store
                .put(
                    &order(n),
                    value(status, rng.below(1000)),
                    PutOptions::default(),
                )
                .expect("put");
        }
        for (check, counts) in [(&unfiltered, &mut plain), (&check, &mut filtered)] {
            let failed = match store.transact(Transaction::new().check_list(check.clone())) {
                Ok(_) => false,
                Err(Error::ListChanged { .. }) => true,
                Err(e) => panic!("commit: {e}"),
            };
            match (failed, changed) {
                (true, false) => counts.0 += 1,
                (true, true) => counts.1 += 1,
                (false, true) => counts.2 += 1,
                (false, false) => {}
            }
        }
    }
    let rate = |n: usize| 100.0 * n as f64 / rounds as f64;
    println!(
        "rounds: {rounds}, 3 writes each by others to 200 orders (20 open, 1 in 20 writes opens or closes one)"
    );
    println!("| check | false conflicts | true conflicts | missed |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, (f, t, m)) in [("unfiltered", plain), ("filtered", filtered)] {
        println!("| {name} | {f} ({:.1}%) | {t} | {m} |", rate(f));
    }
    assert_eq!(
        filtered.0, 0,
        "a filtered check failed with nothing of its result changed"
    );
    assert_eq!(
        filtered.2, 0,
        "a filtered check missed a change of its result"
    );
    assert_eq!(plain.2, 0, "an unfiltered check missed a change");
    assert_eq!(filtered.1, plain.1, "both see every true conflict");
    assert!(
        plain.0 > 0,
        "the workload writes outside the result, or it shows nothing"
    );
}
