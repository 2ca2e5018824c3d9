# training module
