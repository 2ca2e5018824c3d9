def main():
    print("Hello from trl-sft-grpo!")


if __name__ == "__main__":
    main()
