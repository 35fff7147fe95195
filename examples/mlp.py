"""Train a small two-layer classifier with gradients from astad, then show the
generated derivative code.  Run: python examples/mlp.py"""

import numpy as np

import astad


def layer(x, w, b):
    return np.tanh(x @ w + b)


@astad.reverse
def loss(w1, b1, w2, b2, x, y):
    h = layer(x, w1, b1)
    logits = h @ w2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(y * logp, axis=1))


def main() -> None:
    rng = np.random.default_rng(0)
    n, d, hidden, classes = 256, 8, 32, 3
    x = rng.normal(size=(n, d))
    labels = np.argmax(x[:, :classes], axis=1)  # a learnable rule
    y = np.eye(classes)[labels]
    params = [rng.normal(size=(d, hidden)) * 0.3, np.zeros(hidden),
              rng.normal(size=(hidden, classes)) * 0.3, np.zeros(classes)]
    step = astad.value_and_grad(loss, argnums=(0, 1, 2, 3))
    for it in range(201):
        value, grads = step(*params, x, y)
        params = [p - 0.5 * g for p, g in zip(params, grads)]
        if it % 50 == 0:
            print(f"step {it:3d}  loss {value:.4f}")
    print("\nThe generated code (astad show-derivative examples/mlp.py:loss prints it too):\n")
    print(loss.source)


if __name__ == "__main__":
    main()
