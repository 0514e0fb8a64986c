"""Command module placeholder: its owner fills in the commands."""
