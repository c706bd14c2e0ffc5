"""The sim's cluster components over the API server's store: the Job controller and kubelet,
the scheduler and TPU-like Nodes. Each is a component `Sim.add_component` starts and stops."""
