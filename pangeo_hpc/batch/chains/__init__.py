"""The recipe language: a recipe's YAML read and checked (:mod:`.recipe_yaml`), its chains of
recipe functions parsed, checked and applied (:mod:`.chain`), step options' values checked
(:mod:`.option_values`), and the identity of the code a chain runs (:mod:`.code_identity`)."""
