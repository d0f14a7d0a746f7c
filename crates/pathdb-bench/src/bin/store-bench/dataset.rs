//! The benchmark dataset: users with posts and comments, generated deterministically from
//! indexes so every engine gets the same items and a random existing path costs no lookup table.
//!
//! Per user (one group, i.e. one partition):
//! - `/user-<uuid>`: a profile;
//! - `/user-<uuid>/post-<1..=100>`: 100 posts, the user's direct children;
//! - `/user-<uuid>/post-<m>/comment-<timestamp>`: 30 comments under posts 25, 50, 75 and 100
//!   (subtrees deeper than the store's 16-entry children batch, so children listing must seek
//!   over them) and 3 under every other fourth post (stepped over inside a batch): 192 in all.
//!
//! That is 293 items per user; `--items 1000000` makes 3,413 users (1,000,009 items). Keys are
//! 25 (profile), 35 (post) and 54 (comment) bytes in PathDB's binary form (a few more when the
//! UUID needs escapes), 47 on average; values are 70-145 byte JSON objects.

use pathdb_keys::{KeyPath, Uuid};

/// Posts per user.
pub const POSTS_PER_USER: u32 = 100;

/// Comments under post `post` (1-based).
fn comments_under(post: u32) -> u32 {
    if post.is_multiple_of(25) {
        30
    } else if post.is_multiple_of(4) {
        3
    } else {
        0
    }
}

/// One item of a user's subtree: `post == 0` is the profile, `comment == 0` a post.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    post: u32,
    comment: u32,
}

/// A deterministic 64-bit generator (SplitMix64): fast, seedable, no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is negligible for the sizes used here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The users, their subtree layout and the items' values.
pub struct Dataset {
    /// User UUIDs by user index.
    users: Vec<Uuid>,
    /// The layout every user's subtree follows, in key order.
    slots: Vec<Slot>,
}

impl Dataset {
    /// Enough users for at least `items` items (rounded up to whole users).
    pub fn new(items: u64, seed: u64) -> Dataset {
        let mut slots = vec![Slot {
            post: 0,
            comment: 0,
        }];
        for post in 1..=POSTS_PER_USER {
            slots.push(Slot { post, comment: 0 });
            for comment in 1..=comments_under(post) {
                slots.push(Slot { post, comment });
            }
        }
        let n_users = items.div_ceil(slots.len() as u64).max(1);
        let mut rng = Rng::new(seed);
        let users = (0..n_users)
            .map(|_| {
                Uuid::from_u128((u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64()))
            })
            .collect();
        Dataset { users, slots }
    }

    /// The first `n_users` users of this dataset: the dataset `Dataset::new` makes for that
    /// many users with the same seed (users are drawn in order), so a dataset can grow.
    pub fn prefix(&self, n_users: u64) -> Dataset {
        Dataset {
            users: self.users[..(n_users as usize).min(self.users.len())].to_vec(),
            slots: self.slots.clone(),
        }
    }

    /// Users needed for at least `items` items.
    pub fn users_for(&self, items: u64) -> u64 {
        items.div_ceil(self.items_per_user()).max(1)
    }

    /// Number of users.
    pub fn n_users(&self) -> u64 {
        self.users.len() as u64
    }

    /// Items per user.
    pub fn items_per_user(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Total items.
    pub fn n_items(&self) -> u64 {
        self.n_users() * self.items_per_user()
    }

    /// `/user-<uuid>`.
    pub fn user_path(&self, user: u64) -> KeyPath {
        KeyPath::builder()
            .push("user", self.users[user as usize])
            .build()
            .expect("valid path")
    }

    /// The path of one item.
    pub fn path(&self, user: u64, slot: Slot) -> KeyPath {
        let builder = KeyPath::builder().push("user", self.users[user as usize]);
        let builder = match slot {
            Slot { post: 0, .. } => builder,
            Slot { post, comment: 0 } => builder.push("post", i64::from(post)),
            Slot { post, comment } => builder
                .push("post", i64::from(post))
                .push("comment", comment_id(post, comment)),
        };
        builder.build().expect("valid path")
    }

    /// The value of one item; `revision` varies it for overwrites.
    pub fn value(&self, user: u64, slot: Slot, revision: u64) -> String {
        match slot {
            Slot { post: 0, .. } => format!(
                r#"{{"name":"User {user}","email":"user{user}@example.com","joined":{},"bio":"Writes about storage engines.","rev":{revision}}}"#,
                1_600_000_000 + user
            ),
            Slot { post, comment: 0 } => format!(
                r#"{{"title":"Post {post} by user {user}","body":"Lorem ipsum dolor sit amet, consectetur adipiscing elit.","likes":{},"tags":["rust","storage"],"rev":{revision}}}"#,
                (user * 7 + u64::from(post)) % 100
            ),
            Slot { post, comment } => format!(
                r#"{{"author":"user-{}","text":"Thanks, this was useful!","likes":{},"rev":{revision}}}"#,
                (user + u64::from(comment)) % self.n_users(),
                (u64::from(post) * 3 + u64::from(comment)) % 10
            ),
        }
    }

    /// A uniformly random existing item.
    pub fn random_item(&self, rng: &mut Rng) -> (u64, Slot) {
        let user = rng.below(self.n_users());
        let slot = self.slots[rng.below(self.items_per_user()) as usize];
        (user, slot)
    }

    /// A random existing item with a new value to write.
    pub fn random_put(&self, rng: &mut Rng) -> (KeyPath, String) {
        let (user, slot) = self.random_item(rng);
        (
            self.path(user, slot),
            self.value(user, slot, rng.below(1000) + 1),
        )
    }

    /// `n` random distinct existing items with new values: one transaction's puts.
    pub fn random_tx(&self, rng: &mut Rng, n: usize) -> Vec<(KeyPath, String)> {
        let mut out: Vec<(KeyPath, String)> = Vec::with_capacity(n);
        while out.len() < n {
            let (path, value) = self.random_put(rng);
            if out.iter().all(|(p, _)| *p != path) {
                out.push((path, value));
            }
        }
        out
    }

    /// Every item in key order (users sorted by UUID, each subtree in key order), in batches.
    ///
    /// # Errors
    /// Whatever `load` returns.
    pub fn for_each_batch(
        &self,
        batch_size: usize,
        load: impl FnMut(&[(KeyPath, String)]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.for_each_batch_of(0..self.n_users(), batch_size, load)
    }

    /// The same for the users in `users` only (users sorted by UUID): what a dataset grown from
    /// `users.start` users to `users.end` adds.
    ///
    /// # Errors
    /// Whatever `load` returns.
    pub fn for_each_batch_of(
        &self,
        users: std::ops::Range<u64>,
        batch_size: usize,
        mut load: impl FnMut(&[(KeyPath, String)]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut order: Vec<u64> = users.collect();
        order.sort_by_key(|&u| self.users[u as usize]);
        let mut batch = Vec::with_capacity(batch_size);
        for user in order {
            for &slot in &self.slots {
                batch.push((self.path(user, slot), self.value(user, slot, 0)));
                if batch.len() == batch_size {
                    load(&batch)?;
                    batch.clear();
                }
            }
        }
        if !batch.is_empty() {
            load(&batch)?;
        }
        Ok(())
    }
}

/// A comment id: a microsecond timestamp, as an application would use.
fn comment_id(post: u32, comment: u32) -> i64 {
    1_700_000_000_000_000 + i64::from(post) * 1_000_000 + i64::from(comment) * 1_013
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_key_order() {
        let data = Dataset::new(1000, 7);
        assert_eq!(data.items_per_user(), 293);
        assert_eq!(data.n_users(), 4);
        let mut keys = Vec::new();
        let mut tuples = Vec::new();
        data.for_each_batch(100, |batch| {
            keys.extend(batch.iter().map(|(p, _)| p.encode()));
            tuples.extend(batch.iter().map(|(p, _)| (p.partition_key(), p.sort_key())));
            Ok(())
        })
        .unwrap();
        assert_eq!(keys.len() as u64, data.n_items());
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "generated in key order"
        );
        assert!(
            tuples.windows(2).all(|w| w[0] < w[1]),
            "and in (partition, sort) order"
        );
    }
}
