//! Stage: the expiry index. A put with an expiry time also writes an index entry (`00 01` +
//! time + item key, layout.rs), which the sweeper (ttl.rs) reads to find what expired. Reads hide
//! an expired item whether or not it was swept yet.

use super::plan::{Context, Plan, Written};
use crate::backend::{Reader, WriteOp};
use crate::layout;
use crate::record::index_record;

/// Plans the index entry of the put in `written`, if it expires.
pub(super) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    written: &Written<'_>,
) {
    let expires_at = written
        .put
        .and_then(|(index, _)| plan.put_record(index))
        .and_then(|r| r.expires_at);
    let Some(expires_at) = expires_at else {
        return;
    };
    let entry = WriteOp::Put {
        key: layout::expiry_key(expires_at, &written.key),
        record: index_record(ctx.now),
        expect: None,
    };
    plan.push(entry, &written.path, written.fresh);
}
