"""The stack program: `StackConfig` (the typed `Pulumi.<stack>.yaml`) and the program that builds
the platform from it with the components (`stacks/__main__.py` runs `stack.program.run`)."""
