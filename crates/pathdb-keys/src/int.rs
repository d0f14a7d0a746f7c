//! The 65-bit integer of key path ids.

use crate::Rule;

/// An integer id: any value in `-(2^64-1) ..= 2^64-1`, so signed and unsigned 64-bit values sort
/// together (keypath-format.md §1).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Int(i128);

impl Int {
    /// The smallest integer id, `-(2^64-1)`.
    pub const MIN: Int = Int(-(u64::MAX as i128));
    /// The largest integer id, `2^64-1`.
    pub const MAX: Int = Int(u64::MAX as i128);

    /// Makes an integer id, or `None` outside `-(2^64-1) ..= 2^64-1`.
    pub const fn new(value: i128) -> Option<Int> {
        if value >= Self::MIN.0 && value <= Self::MAX.0 {
            Some(Int(value))
        } else {
            None
        }
    }

    /// Builds a value from a sign and a magnitude; `-0` is `0`.
    pub const fn from_sign_magnitude(negative: bool, magnitude: u64) -> Int {
        let m = magnitude as i128;
        Int(if negative { -m } else { m })
    }

    /// The value.
    pub const fn get(self) -> i128 {
        self.0
    }

    /// Whether the value is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// The absolute value.
    pub const fn magnitude(self) -> u64 {
        // In range by construction: |value| <= 2^64-1.
        self.0.unsigned_abs() as u64
    }
}

impl std::fmt::Debug for Int {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::fmt::Display for Int {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

macro_rules! int_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Int {
            fn from(v: $t) -> Int {
                Int(v as i128)
            }
        }
    )*};
}
int_from!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl TryFrom<i128> for Int {
    type Error = Rule;
    fn try_from(v: i128) -> Result<Int, Rule> {
        Int::new(v).ok_or(Rule::IntegerOutOfRange)
    }
}

impl TryFrom<u128> for Int {
    type Error = Rule;
    fn try_from(v: u128) -> Result<Int, Rule> {
        i128::try_from(v)
            .ok()
            .and_then(Int::new)
            .ok_or(Rule::IntegerOutOfRange)
    }
}
