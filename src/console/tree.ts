/** Child runs as a tree (unit-tested in tree.test.ts). */

export interface TreeRun {
  run_id: string;
  parent_run_id: string | null;
  parent_phase: string | null;
  iteration_key: string | null;
}

export interface TreeNode<R extends TreeRun> {
  run: R;
  children: TreeNode<R>[];
}

export interface FlatNode<R extends TreeRun> {
  run: R;
  depth: number;
  /** Ids of the ancestors below the tree's root, outermost first. */
  path: string[];
  hasChildren: boolean;
}

const collator = new Intl.Collator('en', { numeric: true });

/**
 * Orders siblings: by creation (ids are UUID v7) of the first child of their phase, then, within a
 * `foreach` phase, by iteration key in natural order (`2` before `10`), then by id.
 */
function compareSiblings<R extends TreeRun>(phaseOrder: Map<string, string>) {
  return (a: R, b: R): number => {
    const pa = phaseOrder.get(a.parent_phase ?? '') ?? a.run_id;
    const pb = phaseOrder.get(b.parent_phase ?? '') ?? b.run_id;
    if (pa !== pb) return pa < pb ? -1 : 1;
    if (a.iteration_key !== null && b.iteration_key !== null && a.iteration_key !== b.iteration_key) {
      return collator.compare(a.iteration_key, b.iteration_key);
    }
    return a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0;
  };
}

/**
 * The descendants of `rootId` among `runs` as a forest (the root itself is not included). A run whose
 * parent is missing from `runs` (not loaded yet) hangs under the root, so nothing is ever lost; cycles
 * (impossible from the API) cannot loop.
 */
export function buildRunTree<R extends TreeRun>(rootId: string, runs: readonly R[]): TreeNode<R>[] {
  const byId = new Map<string, R>();
  for (const r of runs) if (r.run_id !== rootId) byId.set(r.run_id, r);
  const kids = new Map<string, R[]>();
  for (const r of byId.values()) {
    const parent = r.parent_run_id !== null && byId.has(r.parent_run_id) ? r.parent_run_id : rootId;
    const list = kids.get(parent);
    if (list) list.push(r);
    else kids.set(parent, [r]);
  }
  const seen = new Set<string>();
  const build = (id: string): TreeNode<R>[] => {
    const list = kids.get(id) ?? [];
    const phaseOrder = new Map<string, string>();
    for (const r of list) {
      const key = r.parent_phase ?? '';
      const first = phaseOrder.get(key);
      if (first === undefined || r.run_id < first) phaseOrder.set(key, r.run_id);
    }
    return [...list].sort(compareSiblings<R>(phaseOrder)).flatMap((run) => {
      if (seen.has(run.run_id)) return [];
      seen.add(run.run_id);
      return [{ run, children: build(run.run_id) }];
    });
  };
  return build(rootId);
}

/** Depth-first rows for rendering; `collapsed` ids hide their subtrees. */
export function flattenTree<R extends TreeRun>(
  nodes: readonly TreeNode<R>[],
  collapsed: ReadonlySet<string> = new Set(),
): FlatNode<R>[] {
  const out: FlatNode<R>[] = [];
  const walk = (list: readonly TreeNode<R>[], depth: number, path: string[]) => {
    for (const n of list) {
      out.push({ run: n.run, depth, path, hasChildren: n.children.length > 0 });
      if (!collapsed.has(n.run.run_id)) walk(n.children, depth + 1, [...path, n.run.run_id]);
    }
  };
  walk(nodes, 0, []);
  return out;
}

/** How many runs of a (sub)tree are in each state. */
export function countStates<R extends TreeRun & { state: string }>(
  nodes: readonly TreeNode<R>[],
): Record<string, number> {
  const counts: Record<string, number> = {};
  const walk = (list: readonly TreeNode<R>[]) => {
    for (const n of list) {
      counts[n.run.state] = (counts[n.run.state] ?? 0) + 1;
      walk(n.children);
    }
  };
  walk(nodes);
  return counts;
}

/** The runs of `runs` below `id` (following parent links), for a tree rooted at a child run. */
export function descendantsOf<R extends TreeRun>(id: string, runs: readonly R[]): R[] {
  const byParent = new Map<string, R[]>();
  for (const r of runs) {
    if (r.parent_run_id === null) continue;
    const list = byParent.get(r.parent_run_id);
    if (list) list.push(r);
    else byParent.set(r.parent_run_id, [r]);
  }
  const out: R[] = [];
  const seen = new Set<string>([id]);
  const queue = [id];
  while (queue.length > 0) {
    for (const r of byParent.get(queue.shift()!) ?? []) {
      if (seen.has(r.run_id)) continue;
      seen.add(r.run_id);
      out.push(r);
      queue.push(r.run_id);
    }
  }
  return out;
}
