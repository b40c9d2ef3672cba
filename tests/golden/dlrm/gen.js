// gen.js: the DLRM-like golden (TensorFlow.js 4.22.0, ../tfjs_golden.js). `node gen.js OUTDIR`
// writes data.csv (f0..f3 the dense features, c0..c2 one id each for the three tables, y0 the
// click), init.csv and, for r1, r2 and r4, expected_loss.csv and expected_final.csv.
//
// Model (Keras functional, four Input layers: dense [4], c0, c1, c2 [1] int ids), MLPerf DLRM's
// shape at toy size:
//   dense        Dense(8, relu)(dense input)                    bottom MLP
//   dense_1      Dense(8, relu)                                 -> [8]
//   embedding    Embedding(6, 8)(c0), embedding_1 (5, 8)(c1), embedding_2 (4, 8)(c2), one row each
//   dot_interaction  [dense_1, e0, e1, e2] stacked [4, 8]; Z = T T^T; the strict lower triangle
//                row by row, (1,0) (2,0) (2,1) (3,0) (3,1) (3,2), after dense_1: [8 + 6]
//                (MLPerf's interact_features, TF Recommenders' DotInteraction + the concat)
//   dense_2      Dense(8, relu); dense_3 Dense(1): a logit
// Loss binary_crossentropy from_logits (max(z,0) - z t + log1p(exp(-|z|))), SGD lr 0.05
// momentum 0.9, G = 16, 64 rows, 20 steps; r1, r2 and r4 (1, 2, 4 replicas). tfjs-layers has
// no dot interaction: the model is written with core ops (tf.gather is the embedding lookup, its
// gradient tfjs's gather gradient).
const { tf, rng, stored, makeInit, train } = require('../tfjs_golden.js');

const out = process.argv[2] || '.';
const ROWS = 64, DENSE = 4, VOCABS = [6, 5, 4], D = 8, F = 1 + VOCABS.length, COLS = DENSE + VOCABS.length;

// Rows: 4 centred sums of 4 uniforms, then an id per table; clicked when f0 + f1 plus a
// per-id offset of table 0 is positive, so both the MLP and the tables have something to learn.
const rd = rng(91), x = new Float32Array(ROWS * COLS), targets = new Float32Array(ROWS);
for (let n = 0; n < ROWS; n++) {
  for (let f = 0; f < DENSE; f++) x[n * COLS + f] = stored(rd() + rd() + rd() + rd() - 2);
  VOCABS.forEach((v, k) => { x[n * COLS + DENSE + k] = Math.min(v - 1, Math.floor(rd() * v)); });
  const c0 = x[n * COLS + DENSE];
  targets[n] = x[n * COLS] + x[n * COLS + 1] + (c0 % 2 === 0 ? 0.5 : -0.5) > 0 ? 1 : 0;
}

const init = makeInit(92, [
  ['dense/kernel', [DENSE, D], DENSE, D], ['dense/bias', [D]],
  ['dense_1/kernel', [D, D], D, D], ['dense_1/bias', [D]],
  ['embedding/embeddings', [VOCABS[0], D]],
  ['embedding_1/embeddings', [VOCABS[1], D]],
  ['embedding_2/embeddings', [VOCABS[2], D]],
  ['dense_2/kernel', [D + F * (F - 1) / 2, D], D + F * (F - 1) / 2, D], ['dense_2/bias', [D]],
  ['dense_3/kernel', [D, 1], D, 1], ['dense_3/bias', [1]],
]);

// The strict lower triangle of an F x F matrix, row by row, as flat indices i F + j.
const pairs = [];
for (let i = 1; i < F; i++) for (let j = 0; j < i; j++) pairs.push(i * F + j);
const pairIdx = tf.tensor1d(pairs, 'int32');

function logits(p, xb) {
  const n = xb.shape[0];
  const dense = tf.slice(xb, [0, 0], [n, DENSE]);
  const bottom = tf.relu(tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(dense, p[0]), p[1])), p[2]), p[3]));
  const embs = VOCABS.map((v, k) => tf.gather(p[4 + k], tf.cast(tf.reshape(tf.slice(xb, [0, DENSE + k], [n, 1]), [n]), 'int32')));
  const T = tf.stack([bottom].concat(embs), 1);
  const Z = tf.reshape(tf.matMul(T, T, false, true), [n, F * F]);
  const h = tf.concat([bottom, tf.gather(Z, pairIdx, 1)], 1);
  return tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(h, p[7]), p[8])), p[9]), p[10]);
}

const c = { rows: ROWS, features: COLS, inputShape: [COLS], G: 16, steps: 20, x, init, targetWidth: 1, targets,
            lossSum: (p, xb, yb) => { const z = logits(p, xb);
              return tf.sum(tf.add(tf.sub(tf.relu(z), tf.mul(z, yb)), tf.log1p(tf.exp(tf.neg(tf.abs(z)))))); } };
train(out, c, [1, 2, 4]);

// The id columns by their tables' names (writeData names every column f0, f1, ...).
const fs = require('fs');
const rows = fs.readFileSync(`${out}/data.csv`, 'utf8').split('\n');
rows[0] = ['f0', 'f1', 'f2', 'f3', 'c0', 'c1', 'c2', 'y0'].join(',');
fs.writeFileSync(`${out}/data.csv`, rows.join('\n'));
