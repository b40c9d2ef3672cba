// gen.js: the graphsage golden (TensorFlow.js 4.22.0, ../tfjs_golden.js). `node gen.js OUTDIR`
// writes nodes.csv and edges.csv (the subgraphs as dataset.graph reads them), data.csv (the same
// examples packed as podsim holds them: node features, sources, targets, -1 padding), init.csv
// and, for r1 and r8, expected_loss.csv and expected_final.csv.
//
// Each example is a sampled subgraph of 2..5 nodes (node 0 its seed) and 1..7 directed edges,
// padded to N = 5 nodes and E = 7 edges of F = 3 features. A batch is merged into one graph as
// TF-GNN's GraphTensor.merge_batch_to_components does (example e's node i is node e N + i, its
// edges shifted alike; padding edges dropped, padding nodes left without edges). Model, as
// TF-GNN's graph_sage.GraphSAGEGraphUpdate (GraphSAGEAggregatorConv + GraphSAGENextState) and
// ReadoutFirstNode build it:
//   graph_sage    neighbours' states gathered along edges (tf.gather), pooled at targets by
//                 mean (unsortedSegmentSum / max(count, 1)), times neighbor/kernel [3, 4]; the
//                 node's own state times self/kernel [3, 4]; concat (own first) + bias [8]; relu
//   unit_normalization   x / sqrt(max(sum x^2, 1e-12)) per node (l2_normalize)
//   graph_sage_1  sum pooling, kernels [8, 4], sum combine + bias [4], tanh
//   readout_first_node   node 0 of each example
//   dense         Dense(3) logits
// G = 16, 48 subgraphs, 12 steps, SGD lr 0.05 momentum 0.9.
const fs = require('fs');
const { tf, rng, fmt, stored, makeInit, train, crossEntropySum } = require('../tfjs_golden.js');

const out = process.argv[2] || '.';
const N = 5, E = 7, F = 3, W = N * F + 2 * E, ROWS = 48, G = 16, CLASSES = 3;

// The subgraphs: node features centred sums of 4 uniforms; label the largest of the seed's f0,
// its in-neighbours' mean f1 and the subgraph's mean f2.
const rd = rng(14);
const x = new Float32Array(ROWS * W), labels = new Int32Array(ROWS), graphs = [];
for (let g = 0; g < ROWS; g++) {
  const n = 2 + Math.floor(rd() * (N - 1)), m = 1 + Math.floor(rd() * E);
  const p = x.subarray(g * W, (g + 1) * W);
  for (let i = 0; i < n * F; i++) p[i] = stored(rd() + rd() + rd() + rd() - 2);
  const edges = [];
  for (let j = 0; j < m; j++) {
    // Half the edges point at the seed, as a sampler growing the subgraph from it gives them.
    const s = 1 + Math.floor(rd() * (n - 1)), t = rd() < 0.5 ? 0 : Math.floor(rd() * n);
    edges.push([s, t]);
  }
  for (let j = 0; j < E; j++) {
    p[N * F + j] = j < m ? edges[j][0] : -1;
    p[N * F + E + j] = j < m ? edges[j][1] : -1;
  }
  const into0 = edges.filter((e) => e[1] === 0);
  const nb = into0.length ? into0.reduce((a, e) => a + p[e[0] * F + 1], 0) / into0.length : 0;
  let all = 0;
  for (let i = 0; i < n; i++) all += p[i * F + 2];
  const sc = [p[0], nb, all / n];
  labels[g] = sc[0] >= sc[1] && sc[0] >= sc[2] ? 0 : sc[1] >= sc[2] ? 1 : 2;
  graphs.push({ n, edges });
}

const nodeLines = ['graph,node,label,f0,f1,f2'], edgeLines = ['graph,source,target'];
graphs.forEach(({ n, edges }, g) => {
  for (let i = 0; i < n; i++) {
    const f = Array.from(x.subarray(g * W + i * F, g * W + (i + 1) * F), fmt);
    nodeLines.push([g, i, i === 0 ? labels[g] : ''].concat(f).join(','));
  }
  edges.forEach(([s, t]) => edgeLines.push(`${g},${s},${t}`));
});
fs.writeFileSync(out + '/nodes.csv', nodeLines.join('\n') + '\n');
fs.writeFileSync(out + '/edges.csv', edgeLines.join('\n') + '\n');

const init = makeInit(28, [
  ['graph_sage/neighbor/kernel', [F, 4], F, 4],
  ['graph_sage/self/kernel', [F, 4], F, 4],
  ['graph_sage/bias', [8]],
  ['graph_sage_1/neighbor/kernel', [8, 4], 8, 4],
  ['graph_sage_1/self/kernel', [8, 4], 8, 4],
  ['graph_sage_1/bias', [4]],
  ['dense/kernel', [4, CLASSES], 4, CLASSES],
  ['dense/bias', [CLASSES]],
]);

// One GraphSAGE update of h [B N, D] over the merged graph's edges (src, tgt int32 tensors).
function sage(h, src, tgt, count, wn, ws, b, mean, concat, act) {
  let pooled = tf.unsortedSegmentSum(tf.gather(h, src), tgt, h.shape[0]);
  if (mean) pooled = tf.div(pooled, tf.reshape(tf.maximum(count, 1), [-1, 1]));
  const own = tf.matMul(h, ws), nb = tf.matMul(pooled, wn);
  return act(tf.add(concat ? tf.concat([own, nb], 1) : tf.add(own, nb), b));
}

function lossSum(p, xb, yb) {
  const B = xb.shape[0], rows = xb.dataSync(), src = [], tgt = [];
  for (let e = 0; e < B; e++)
    for (let j = 0; j < E; j++) {
      const s = rows[e * W + N * F + j], t = rows[e * W + N * F + E + j];
      if (s >= 0 && t >= 0) { src.push(e * N + s); tgt.push(e * N + t); }
    }
  const S = tf.tensor1d(src, 'int32'), T = tf.tensor1d(tgt, 'int32');
  const count = tf.unsortedSegmentSum(tf.ones([tgt.length]), T, B * N);
  const h0 = tf.reshape(tf.slice(xb, [0, 0], [B, N * F]), [B * N, F]);
  let h = sage(h0, S, T, count, p[0], p[1], p[2], true, true, tf.relu);
  h = tf.mul(h, tf.rsqrt(tf.maximum(tf.sum(tf.square(h), 1, true), 1e-12)));
  h = sage(h, S, T, count, p[3], p[4], p[5], false, false, tf.tanh);
  const seeds = tf.gather(h, tf.tensor1d(Array.from({ length: B }, (_, e) => e * N), 'int32'));
  return crossEntropySum(tf.add(tf.matMul(seeds, p[6]), p[7]), yb, CLASSES);
}

train(out, { rows: ROWS, features: W, inputShape: [W], G, steps: 12, x, labels, init, lossSum }, [1, 8]);
