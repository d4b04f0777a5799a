//! The region balancer, by region count (HBase's `SimpleLoadBalancer`
//! without its slop): moves regions from the most loaded live servers to
//! the least loaded until no server holds more than one region above
//! another. A server that joins the cluster takes its share this way.
//!
//! The active master runs it every `balancer_period` (HBase's
//! `hbase.balancer.period`, 5 minutes), and only when nothing is in
//! transition and no dead server's WAL waits for recovery
//! (`assignment.rs`). A move closes the region on its server (flushed, so
//! the new owner needs none of the old one's WAL) and opens it on the
//! target; a failed open leaves it unassigned, for the next pass.
//!
//! Thread safety: a plan is a pure function of the loads it is given.

use std::collections::BTreeMap;

/// One region to move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub region: String,
    pub from: String,
    pub to: String,
}

/// The moves that balance `open` (server name → the regions it has open),
/// at most `max` of them: each takes a region of the most loaded server to
/// the least loaded while they differ by more than one.
pub fn plan(open: &BTreeMap<String, Vec<String>>, max: usize) -> Vec<Move> {
    let mut load: BTreeMap<&str, Vec<&str>> =
        open.iter().map(|(s, regions)| (s.as_str(), regions.iter().map(String::as_str).collect())).collect();
    let mut moves = Vec::new();
    while moves.len() < max {
        let Some((most, _)) = load.iter().max_by_key(|(name, r)| (r.len(), std::cmp::Reverse(**name))) else { break };
        let Some((least, _)) = load.iter().min_by_key(|(name, r)| (r.len(), **name)) else { break };
        let (most, least) = (*most, *least);
        if load[most].len() <= load[least].len() + 1 {
            break;
        }
        let region = load.get_mut(most).and_then(Vec::pop).expect("the most loaded server has regions");
        load.get_mut(least).expect("a server").push(region);
        moves.push(Move { region: region.to_string(), from: most.to_string(), to: least.to_string() });
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loads(spec: &[(&str, usize)]) -> BTreeMap<String, Vec<String>> {
        spec.iter().map(|(s, n)| (s.to_string(), (0..*n).map(|i| format!("{s}{i}")).collect())).collect()
    }

    fn after(open: &BTreeMap<String, Vec<String>>, moves: &[Move]) -> Vec<usize> {
        let mut counts: BTreeMap<&str, i64> = open.iter().map(|(s, r)| (s.as_str(), r.len() as i64)).collect();
        for m in moves {
            *counts.get_mut(m.from.as_str()).expect("from") -= 1;
            *counts.get_mut(m.to.as_str()).expect("to") += 1;
        }
        counts.values().map(|c| *c as usize).collect()
    }

    #[test]
    fn regions_spread_until_no_server_holds_two_more_than_another() {
        let open = loads(&[("a", 6), ("b", 0), ("c", 0)]);
        let moves = plan(&open, 100);
        assert_eq!(moves.len(), 4);
        assert_eq!(after(&open, &moves), [2, 2, 2]);
        assert!(moves.iter().all(|m| m.from == "a" && open["a"].contains(&m.region)));

        let open = loads(&[("a", 5), ("b", 2)]);
        assert_eq!(after(&open, &plan(&open, 100)), [4, 3]);
        // Balanced within one: nothing moves.
        assert!(plan(&loads(&[("a", 3), ("b", 2), ("c", 3)]), 100).is_empty());
        assert!(plan(&loads(&[("a", 1)]), 100).is_empty());
        assert!(plan(&BTreeMap::new(), 100).is_empty());
    }

    #[test]
    fn at_most_max_moves_in_one_run() {
        let open = loads(&[("a", 10), ("b", 0)]);
        assert_eq!(plan(&open, 2).len(), 2);
        assert_eq!(plan(&open, 0).len(), 0);
    }
}
