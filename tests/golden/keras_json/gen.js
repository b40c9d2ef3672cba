// gen.js: Keras model configs written by TensorFlow.js 4.22.0's model.toJSON() (Keras's
// model.to_json() format), with each model's initial values and its predictions on a few inputs,
// for tests/models/test_keras.c (`node gen.js OUTDIR`). Per model NAME: NAME.json (the config),
// NAME_init.csv (every variable, Keras's names), NAME_x.csv (inputs, one example a row) and
// NAME_predict.csv (model.predict of them: inference, so dropout passes and batch normalization
// uses the moving statistics).
//   sequential: Conv2D(4, 3, same, relu) -> BatchNormalization -> DepthwiseConv2D(3, x2, same,
//     swish) -> MaxPooling2D(2) -> AveragePooling2D(2, strides 1, same) -> Dropout(0.25) ->
//     LayerNormalization -> Activation(tanh) -> Reshape([9, 8]) -> Softmax -> Flatten -> Dense(3,
//     sigmoid) on [6, 6, 2]
//   functional: Dense(6, relu) and Dense(6) of one input [5], Concatenate, Dense(6, tanh), Add of
//     it and both first denses, Reshape([1, 3, 2]) -> GlobalAveragePooling2D -> Dense(3)
//   embedding: Embedding(10, 4, input_length 1) -> Flatten -> Dense(3) on one id
const fs = require('fs');
const { tf, fmt, rng, makeInit } = require('../tfjs_golden.js');

const out = process.argv[2] || '.';
const L = tf.layers;

function write(name, model, init, x) {
  // Each layer's weights in Keras's order (tfjs's model.weights lists the trainable ones first).
  const layerWeights = model.layers.flatMap((l) => l.weights);
  layerWeights.forEach((w, i) => {
    if (w.shape.join() !== init[i].shape.join()) throw new Error(`${w.name} is not ${init[i].name}`);
    w.write(tf.tensor(init[i].v, init[i].shape, 'float32'));
  });
  fs.writeFileSync(`${out}/${name}.json`, JSON.stringify(model.toJSON(null, false), null, 1) + '\n');
  fs.writeFileSync(`${out}/${name}_init.csv`, ['variable,flat_index,value']
    .concat(...init.map((w) => Array.from(w.v, (v, i) => `${w.name},${i},${fmt(v)}`))).join('\n') + '\n');
  const rows = (t) => { const a = t.arraySync(); return a.map((r) => [r].flat(Infinity).map(fmt).join(',')).join('\n') + '\n'; };
  // Several inputs: a row holds every input's values side by side, in model.inputs' order.
  fs.writeFileSync(`${out}/${name}_x.csv`, rows(Array.isArray(x) ? tf.concat(x.map((t) => tf.cast(t, 'float32')), 1) : x));
  fs.writeFileSync(`${out}/${name}_predict.csv`, rows(model.predict(x)));
  // The variables tfjs-layers made, in its order: podsim must make the same names and shapes.
  console.log(name, layerWeights.map((w) => `${w.originalName} ${w.shape.join('x')}`).join(', '));
}

function images(seed, n, shape) {
  const r = rng(seed), size = shape.reduce((a, b) => a * b, 1), v = new Float32Array(n * size);
  for (let i = 0; i < v.length; i++) v[i] = Math.fround(Number(fmt(2 * r() - 1)));
  return tf.tensor(v, [n].concat(shape));
}

{
  const model = tf.sequential({ name: 'sequential', layers: [
    L.conv2d({ inputShape: [6, 6, 2], filters: 4, kernelSize: 3, padding: 'same', activation: 'relu', name: 'conv2d' }),
    L.batchNormalization({ name: 'batch_normalization' }),
    L.depthwiseConv2d({ kernelSize: 3, depthMultiplier: 2, padding: 'same', activation: 'swish', name: 'depthwise_conv2d' }),
    L.maxPooling2d({ poolSize: 2, name: 'max_pooling2d' }),
    L.averagePooling2d({ poolSize: 2, strides: 1, padding: 'same', name: 'average_pooling2d' }),
    L.dropout({ rate: 0.25, name: 'dropout' }),
    L.layerNormalization({ name: 'layer_normalization' }),
    L.activation({ activation: 'tanh', name: 'activation' }),
    L.reshape({ targetShape: [9, 8], name: 'reshape' }),
    L.softmax({ axis: -1, name: 'softmax' }),
    L.flatten({ name: 'flatten' }),
    L.dense({ units: 3, activation: 'sigmoid', name: 'dense' }),
  ] });
  const init = makeInit(71, [
    ['conv2d/kernel', [3, 3, 2, 4], 18, 36], ['conv2d/bias', [4]],
    ['batch_normalization/gamma', [4]], ['batch_normalization/beta', [4]],
    ['batch_normalization/moving_mean', [4]], ['batch_normalization/moving_variance', [4], 0, 0, 0.75],
    ['depthwise_conv2d/depthwise_kernel', [3, 3, 4, 2], 9, 18], ['depthwise_conv2d/bias', [8]],
    ['layer_normalization/gamma', [8]], ['layer_normalization/beta', [8]],
    ['dense/kernel', [72, 3], 72, 3], ['dense/bias', [3]],
  ]);
  init[2].v = init[2].v.map((v) => 1 + v);
  init[8].v = init[8].v.map((v) => 1 + v);
  write('sequential', model, init, images(72, 4, [6, 6, 2]));
}

{
  const input = tf.input({ shape: [5], name: 'input_1' });
  const d0 = L.dense({ units: 6, activation: 'relu', name: 'dense' }).apply(input);
  const d1 = L.dense({ units: 6, name: 'dense_1' }).apply(input);
  const cat = L.concatenate({ name: 'concatenate' }).apply([d0, d1]);
  const d2 = L.dense({ units: 6, activation: 'tanh', name: 'dense_2' }).apply(cat);
  const sum = L.add({ name: 'add' }).apply([d2, d0, d1]);
  const img = L.reshape({ targetShape: [1, 3, 2], name: 'reshape' }).apply(sum);
  const gap = L.globalAveragePooling2d({ name: 'global_average_pooling2d' }).apply(img);
  const logits = L.dense({ units: 3, name: 'dense_3' }).apply(gap);
  const model = tf.model({ inputs: input, outputs: logits, name: 'functional' });
  const init = makeInit(73, [
    ['dense/kernel', [5, 6], 5, 6], ['dense/bias', [6]], ['dense_1/kernel', [5, 6], 5, 6], ['dense_1/bias', [6]],
    ['dense_2/kernel', [12, 6], 12, 6], ['dense_2/bias', [6]], ['dense_3/kernel', [2, 3], 2, 3], ['dense_3/bias', [3]],
  ]);
  write('functional', model, init, images(74, 4, [5]));
}

{
  const model = tf.sequential({ name: 'embedding_model', layers: [
    L.embedding({ inputDim: 10, outputDim: 4, inputLength: 1, name: 'embedding' }),
    L.flatten({ name: 'flatten' }),
    L.dense({ units: 3, name: 'dense' }),
  ] });
  const init = makeInit(75, [['embedding/embeddings', [10, 4], 10, 4], ['dense/kernel', [4, 3], 4, 3], ['dense/bias', [3]]]);
  write('embedding', model, init, tf.tensor2d([[3], [0], [9], [3]], [4, 1], 'int32'));
}

// multi_input: a functional model of two Input layers, DLRM's shape: numeric [3] through
// Dense(4, relu), id input c0 (one id < 6) through Embedding(6, 4) and Flatten, the two
// Concatenated, Dense(2).
{
  const numeric = tf.input({ shape: [3], name: 'numeric' });
  const c0 = tf.input({ shape: [1], name: 'c0', dtype: 'int32' });
  const bottom = L.dense({ units: 4, activation: 'relu', name: 'bottom' }).apply(numeric);
  const table = L.embedding({ inputDim: 6, outputDim: 4, name: 'table' }).apply(c0);
  const flat = L.flatten({ name: 'flat' }).apply(table);
  const cat = L.concatenate({ name: 'concat' }).apply([bottom, flat]);
  const logits = L.dense({ units: 2, name: 'out' }).apply(cat);
  const model = tf.model({ inputs: [numeric, c0], outputs: logits, name: 'multi_input' });
  // In model.layers' order (tfjs puts the table before the bottom layer), as the config lists them.
  const init = makeInit(76, [['table/embeddings', [6, 4], 6, 4], ['bottom/kernel', [3, 4], 3, 4], ['bottom/bias', [4]],
    ['out/kernel', [8, 2], 8, 2], ['out/bias', [2]]]);
  write('multi_input', model, init, [images(77, 4, [3]), tf.tensor2d([[5], [0], [2], [5]], [4, 1], 'int32')]);
}
