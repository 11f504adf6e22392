"""The task environments of AMF (``docs/amf.md``).

Bagatella, Hübotter, Martius, Krause, "Active Fine-Tuning of Multi-Task Policies", ICML 2025.
A multi-task policy pre-trained by behaviour cloning is fine-tuned on expert demonstrations,
and the fine-tuner chooses which task each demonstration is for:

- :mod:`.reach`: ``Methods/MultiTaskReach-v0``, the paper's 2-D integrator (reach one of 12
  goals on the unit circle) with its scripted noisy expert;
- :mod:`.learners`: the policies being fine-tuned, an exact Gaussian process and a small MLP
  with the adaptive prior that limits forgetting;
- :mod:`.fine_tuning`: ``Methods/ActiveFineTuning-v0``, one step per demonstration request.

The selection rules (AMF and its baselines) are the agents of
:mod:`omnigym.agents.methods.amf`.
"""
