//! Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
//! SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB, plus the RESP2 subscribed-context rule
//! of server.c's processCommand. Mirrors Redis 7.0's pubsub.c; delivery, tenancy and
//! ordering are described in [`crate::pubsub`].

use super::{subcommand, Client};
use crate::cmdtable::{self, Cmd, CommandSpec};
use crate::pubsub::{Kind, Subscriptions};
use crate::resp::{Args, Out};
use crate::state::Shared;

/// Writes a (p|s)subscribe / (p|s)unsubscribe confirmation: an array in RESP2, a push
/// in RESP3 (addReplyPubsubSubscribed / addReplyPubsubUnsubscribed). A mass
/// unsubscribe with nothing to drop names no channel: a null.
fn confirmation(out: &mut Out, word: &[u8], name: Option<&[u8]>, count: usize) {
    out.push(3);
    out.bulk(word);
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.int(count as i64);
}

/// SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE name [name ...]: one confirmation per argument,
/// repeats included (pubsubSubscribeChannel notifies even when already subscribed).
pub(super) fn subscribe_command(shared: &Shared, c: &mut Client, kind: Kind, args: Args<'_>) {
    let subs = c.pubsub.get_or_insert_with(|| {
        Box::new(Subscriptions::new(
            shared.pubsub.clone(),
            c.tenant,
            c.meta.clone(),
        ))
    });
    for name in args.iter().skip(1) {
        subs.subscribe(kind, name);
        confirmation(
            &mut c.out,
            kind.subscribe_word(),
            Some(name),
            subs.count_for(kind),
        );
    }
}

/// UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE [name ...]: without names, every
/// subscription of that kind; always at least one confirmation.
pub(super) fn unsubscribe_command(c: &mut Client, kind: Kind, args: Args<'_>) {
    if args.len() > 1 {
        for name in args.iter().skip(1) {
            unsubscribe_one(c, kind, name);
        }
    } else {
        let names = c.pubsub.as_ref().map(|s| s.list(kind)).unwrap_or_default();
        if names.is_empty() {
            let count = c.pubsub.as_ref().map_or(0, |s| s.count_for(kind));
            confirmation(&mut c.out, kind.unsubscribe_word(), None, count);
        }
        for name in &names {
            unsubscribe_one(c, kind, name);
        }
    }
    // Leaving Pub/Sub mode: nothing can be queued any more (every name is out of the
    // registry and the queue was drained after each removal).
    if c.pubsub.as_ref().is_some_and(|s| s.is_empty()) {
        c.pubsub = None;
    }
}

fn unsubscribe_one(c: &mut Client, kind: Kind, name: &[u8]) {
    let count = match c.pubsub.as_mut() {
        Some(s) => {
            s.unsubscribe(kind, name);
            // Messages queued before the removal go out before its confirmation, as
            // they would sit before it in Redis's output buffer.
            s.drain(&mut c.out, usize::MAX);
            s.count_for(kind)
        }
        None => 0,
    };
    confirmation(&mut c.out, kind.unsubscribe_word(), Some(name), count);
}

/// PUBLISH / SPUBLISH channel message: the number of receptions.
pub(super) fn publish_command(shared: &Shared, c: &mut Client, kind: Kind, args: Args<'_>) {
    let mut own = Vec::new();
    // Only a connection with subscriptions of its own takes its copies inline; any
    // other caller (one that shares a connection's id without being it, such as a
    // script's client) lets them go through the mailbox. Client ids start at 1.
    let self_id = if c.pubsub.is_some() { c.meta.id } else { 0 };
    let n = shared
        .pubsub
        .publish(c.tenant, kind, args.get(1), args.get(2), self_id, &mut own);
    if !own.is_empty() {
        if let Some(s) = c.pubsub.as_mut() {
            s.drain(&mut c.out, usize::MAX);
        }
        for p in &own {
            p.write(&mut c.out);
        }
    }
    c.out.int(n);
}

/// PUBSUB CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB | HELP, over the
/// caller's tenant.
pub(super) fn pubsub_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    let reg = &shared.pubsub;
    match sub {
        "channels" | "shardchannels" => {
            if args.len() > 3 {
                return super::subcommand_syntax_error(&mut c.out, args);
            }
            let kind = if sub == "channels" {
                Kind::Channel
            } else {
                Kind::Shard
            };
            let pattern = (args.len() == 3).then(|| args.get(2));
            let names = reg.names(c.tenant, kind, pattern);
            c.out.array(names.len());
            for n in &names {
                c.out.bulk(n);
            }
        }
        "numsub" | "shardnumsub" => {
            let kind = if sub == "numsub" {
                Kind::Channel
            } else {
                Kind::Shard
            };
            c.out.array((args.len() - 2) * 2);
            for name in args.iter().skip(2) {
                c.out.bulk(name);
                c.out.int(reg.subscriber_count(c.tenant, kind, name) as i64);
            }
        }
        "numpat" => c.out.int(reg.counts(c.tenant).patterns as i64),
        _ => super::help_reply(
            &mut c.out,
            "PUBSUB",
            &[
                "CHANNELS [<pattern>]",
                "    Return the currently active channels matching a <pattern> (default: '*').",
                "NUMPAT",
                "    Return number of subscriptions to patterns.",
                "NUMSUB [<channel> ...]",
                "    Return the number of subscribers for the specified channels, excluding",
                "    pattern subscriptions(default: no channels).",
                "SHARDCHANNELS [<pattern>]",
                "    Return the currently active shard level channels matching a <pattern> (default: '*').",
                "SHARDNUMSUB [<shardchannel> ...]",
                "    Return the number of subscribers for the specified shard level channel(s)",
            ],
        ),
    }
}

/// processCommand's rule for a RESP2 connection in Pub/Sub mode: only the
/// (un)subscribe commands, PING, QUIT and RESET run; anything else is refused with
/// Redis's text naming the command (`container|sub` for a subcommand). A command that
/// fails lookup, arity or subcommand checks gets that error instead, as in Redis,
/// where those checks come first. Returns false when it refused the command.
pub(super) fn resp2_context_allows(
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) -> bool {
    let name = match spec.cmd {
        Cmd::Ping
        | Cmd::Subscribe
        | Cmd::SSubscribe
        | Cmd::Unsubscribe
        | Cmd::SUnsubscribe
        | Cmd::PSubscribe
        | Cmd::PUnsubscribe
        | Cmd::Quit
        | Cmd::Reset => return true,
        _ if spec.subcommands.is_empty() => spec.name,
        _ => match spec.sub(args.get(1)) {
            Some(sub) if cmdtable::arity_ok(sub.arity, args.len()) => sub.name,
            _ => return true,
        },
    };
    c.out.error(&format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ));
    false
}
